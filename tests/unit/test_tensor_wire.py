"""The exchange's tensor wire (``exchange_wire=tensor``, NCCL's format on CUDA), without ranks:
chunks of every type packed by several senders and unpacked come back equal -- nulls, constants,
1-row expansions, strings (dictionary and by value), SUMs beyond 64 bits, chunks without
columns -- and packing fixed-width columns never makes the host wait for the device."""

from __future__ import annotations

import collections

import numpy as np
import pyarrow as pa
import pytest
import torch

from sluice.chunk import Chunk, Column
from sluice.ranks.tensor_wire import pack, unpack
from sluice.types import _TORCH_DTYPES, NESTED_KINDS, LType

CPU = torch.device("cpu")
FIXED = [k for k in _TORCH_DTYPES if k != "string" and k not in NESTED_KINDS]


def _column(kind: str, n: int, seed: int, nulls: bool) -> Column:
    g = torch.Generator().manual_seed(seed)
    t = LType(kind, 2 if kind == "decimal" else 0, 12 if kind == "decimal" else 0)
    if kind == "bool":
        data = torch.rand(n, generator=g) < 0.5
    elif kind.startswith("float"):
        data = torch.randn(n, generator=g).to(t.torch_dtype)
    else:
        info = torch.iinfo(t.torch_dtype)
        data = torch.randint(max(info.min, -10**6), min(info.max, 10**6), (n,), generator=g, dtype=t.torch_dtype)
    valid = (torch.rand(n, generator=g) < 0.7) if nulls else None
    return Column(data, t, valid)


def _chunk(n: int, seed: int) -> Chunk:
    cols = {f"{k}{i}": _column(k, n, seed + 31 * i + j, nulls=bool(i))
            for j, k in enumerate(FIXED) for i in range(2)}
    cols["const"] = Column(torch.tensor(7, dtype=torch.int32), LType("int32"))
    cols["null_const"] = Column(torch.tensor(0.0, dtype=torch.float64), LType("float64"), torch.tensor(False))
    words = pa.array(["a", "bb", "", "ccc"])
    cols["dict_str"] = Column(torch.arange(n, dtype=torch.int32) % 4, LType("string"), None, words)
    cols["plain_str"] = Column(torch.arange(n, dtype=torch.int32), LType("string"),
                               torch.arange(n) % 3 != 0, pa.array([f"s{i}" for i in range(n)]))
    return Chunk(cols, n, home=CPU)


def _same(a: Chunk, b: Chunk) -> None:
    assert a.num_rows == b.num_rows and list(a.columns) == list(b.columns)
    n = a.num_rows
    for name, x in a.columns.items():
        x, y = x.expand(n), b.columns[name].expand(n)
        assert x.type == y.type, name
        vx = torch.ones(n, dtype=torch.bool) if x.valid is None else x.valid
        vy = torch.ones(n, dtype=torch.bool) if y.valid is None else y.valid
        assert torch.equal(vx, vy), name
        if x.type.kind == "string":
            assert x.dictionary.take(pa.array(x.data.long().numpy())).filter(pa.array(vx.numpy())) == \
                y.dictionary.take(pa.array(y.data.long().numpy())).filter(pa.array(vy.numpy())), name
        elif x.wide is not None:
            assert [w for w, v in zip(x.wide, vx.tolist()) if v] == [w for w, v in zip(y.wide, vy.tolist()) if v]
        else:
            assert torch.equal(x.data[vx], y.data[vy]), name


@pytest.mark.parametrize("sizes", [(5,), (1, 3, 0, 8), (1,), (1000, 1)])
def test_chunks_of_every_type_round_trip(sizes):
    chunks = [_chunk(n, seed) for seed, n in enumerate(sizes)]
    packed = [pack(c) for c in chunks]
    for p in packed:
        assert p.device_bytes == sum(t.numel() for t in p.pieces) and p.device_bytes % 8 == 0
    host = torch.from_numpy(np.concatenate([p.host for p in packed]))
    dev = torch.cat([t for p in packed for t in p.pieces])
    got = unpack(host, dev, CPU)
    assert [c.num_rows for c in got] == [n for n in sizes if n]
    for want, have in zip([c for c in chunks if c.num_rows], got):
        _same(want, have)


def test_wide_sums_and_rows_without_columns_cross():
    wide = Column(torch.zeros(3, dtype=torch.int64), LType("decimal", 2, 38), torch.tensor([True, False, True]),
                  None, (10**30, 0, -(10**25)))
    chunks = [Chunk({"w": wide, "k": _column("int64", 3, 1, False)}, 3, home=CPU), Chunk({}, 4, home=CPU)]
    packed = [pack(c) for c in chunks]
    got = unpack(torch.from_numpy(np.concatenate([p.host for p in packed])),
                 torch.cat([t for p in packed for t in p.pieces]), CPU)
    _same(chunks[0], got[0])
    assert got[1].num_rows == 4 and not got[1].columns


def test_a_misdescribed_buffer_is_an_internal_error():
    from sluice.errors import InternalError
    p = pack(_chunk(4, 0))
    with pytest.raises(InternalError):
        unpack(torch.from_numpy(p.host), torch.cat(p.pieces + [torch.zeros(8, dtype=torch.uint8)]), CPU)


def test_packing_fixed_width_columns_never_waits_for_the_device(monkeypatch):
    """On CUDA the device bytes go to NCCL without a host round trip: none of the calls that
    would wait for a GPU runs while packing or unpacking them (strings do wait: their
    dictionaries live on the host)."""
    chunk = Chunk({k: _column(k, 100, i, nulls=True) for i, k in enumerate(FIXED)}, 100, home=CPU)
    counts: collections.Counter = collections.Counter()
    for name in ("item", "__int__", "__bool__", "__float__", "tolist", "cpu", "numpy"):
        orig = getattr(torch.Tensor, name)

        def counted(self, *a, _orig=orig, _name=name, **k):
            counts[_name] += 1
            return _orig(self, *a, **k)
        monkeypatch.setattr(torch.Tensor, name, counted)
    p = pack(chunk)
    dev = torch.cat(p.pieces)
    got = unpack(torch.from_numpy(p.host), dev, CPU)  # the host buffer's numpy() is host memory
    assert counts["numpy"] <= 1 and sum(counts.values()) - counts["numpy"] == 0, counts
    monkeypatch.undo()
    _same(chunk, got[0])


@pytest.mark.parametrize("device,local_ranks,gpus,setting,want", [
    ("cpu", 2, 0, "auto", "arrow"), ("cuda:0", 1, 1, "auto", "tensor"), ("cuda:0", 2, 1, "auto", "arrow"),
    ("cuda:1", 2, 2, "auto", "tensor"), ("cpu", 2, 0, "tensor", "tensor"), ("cuda:0", 1, 1, "arrow", "arrow")])
def test_auto_wire_is_nccl_only_with_a_gpu_per_rank(monkeypatch, device, local_ranks, gpus, setting, want):
    from types import SimpleNamespace

    from sluice.config import Config
    from sluice.exec.exchange_rounds import wire_of
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(local_ranks))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    ctx = SimpleNamespace(device=torch.device(device), config=Config(exchange_wire=setting))
    assert wire_of(ctx) == want


@pytest.mark.parametrize("codec", [("none", None), ("lz4", None), ("zstd", 1), ("zstd", 9)])
def test_the_arrow_wire_round_trips_compressed(codec):
    """exchange_compression: each level of the regulated scale packs rows the receiver reads
    back unchanged, whatever level other senders of the round chose."""
    from sluice.arrow import page_to_batch
    from sluice.ranks.wire import bytes_to_chunks, framed
    chunks = [_chunk(n, seed) for seed, n in enumerate((700, 3))]
    levels = [codec, ("none", None)]
    buf = np.concatenate([framed(page_to_batch(c), lv) for c, lv in zip(chunks, levels)])
    got = bytes_to_chunks(torch.from_numpy(buf), CPU)
    for want, have in zip(chunks, got):
        _same(want, have)
    if codec[0] != "none":  # the compressed stream is smaller
        assert framed(page_to_batch(chunks[0]), codec).size < framed(page_to_batch(chunks[0])).size
