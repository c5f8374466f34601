"""Column chunks as stored -> one sluice Column, decoded by the Triton page kernels
(:mod:`~sluice.io.parquet.decode.kernels`) on the scan's device.

The steps: the task's pages from the cached page index (:mod:`page_index`, numpy: where every
page lies once decompressed, which pages a row selection keeps); decompression into that layout
(nvCOMP on the GPU where it can, else the host's codecs and one copy); the page descriptors
crossing to the device in one copy per encoding group; then the launches -- where the levels
and values lie, the definition levels, the values (PLAIN, dictionary indices fused with the
gather, BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED, RLE booleans), the NULL scatter, the type's
conversion -- every output sized from the page headers. Nothing here waits for the device:
each kernel records a per-page error code, and :func:`check` reads them all once, after the
task's columns are decoded. String columns keep their dictionary on the host (the dictionary
pages are read there, :mod:`dict_strings`); string pages not dictionary-encoded raise
:class:`NotDecodable` and the column is left to pyarrow, as any encoding the kernels lack.
"""

from __future__ import annotations

import contextlib
import threading
import zlib

import numpy as np
import pyarrow as pa
import torch

from sluice.arrow import widen_timestamps
from sluice.chunk import Column, concat_columns, empty_column
from sluice.io.parquet.decode import dict_strings
from sluice.io.parquet.decode.column import PAD, CODECS, NotDecodable, Skipped, _decompress, transient_bytes
from sluice.io.parquet.decode.page_index import DICT_PAGE, ENCODING_CODE, V1, V2, PageIndex, read_index
from sluice.kernels.buffers import to_device
from sluice.io.parquet.decode.kernels import ERRORS, interpreted

PLAIN, RLE, DELTA, BSS = (ENCODING_CODE[e] for e in ("PLAIN", "RLE", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"))
DICTS = (ENCODING_CODE["PLAIN_DICTIONARY"], ENCODING_CODE["RLE_DICTIONARY"])
NAMES = {code: name for name, code in ENCODING_CODE.items()}
#: value bytes of a physical type (FIXED_LEN_BYTE_ARRAY: the column's length)
WIDTH = {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8, "BOOLEAN": 1}
#: the descriptor rows of a data page
R_AT, R_END, R_V1, R_LVS, R_LVE, R_SLOT, R_N, R_CHUNK = range(8)


class Descriptors:
    """Pages as device tensors (one row of an int64 matrix per field) plus host-known sizes."""

    def __init__(self, m: torch.Tensor, most: int) -> None:
        self.at, self.end, self.v1, self.lv_start, self.lv_end, self.slot, self.n, self.chunk = m
        self.pages = int(m.shape[1])
        self.most = most


def _kernels():
    from sluice.io.parquet.decode.kernels import delta, hybrid, levels, plain, scatter, split  # deferred: optional GPU package (triton)
    return levels, hybrid, plain, split, delta, scatter


#: Triton's interpreter patches triton.language for the length of each launch: launches from two
#: I/O threads at once break each other, so there they take turns (on CUDA they never wait here).
_INTERPRETER = threading.Lock()


class KernelPages:
    """One column's chunks of a read task, their page index read once per file version."""

    def __init__(self, chunks: list[tuple], spec, indexes: list[PageIndex] | None = None):
        self.spec = spec
        self.chunks = chunks
        for _data, codec, *_ in chunks:
            if CODECS.get(codec, "?") == "?":
                raise NotDecodable(f"codec {codec}")
        self.idx = indexes if indexes is not None else [read_index(c[0], *c[2:3]) for c in chunks]
        self.use = [ix.data.copy() for ix in self.idx]  # the data pages decoded, per chunk
        self.keep: np.ndarray | None = None
        self.covered: np.ndarray | None = None
        self.skipped = Skipped()

    def select(self, keep: np.ndarray) -> KernelPages:
        """Keep only the rows ``keep`` (a host mask over the chunks' rows): data pages holding
        none are left out (a flat column's page holds as many rows as values)."""
        covered = np.zeros(len(keep), dtype=bool)
        row = 0
        for c, ix in enumerate(self.idx):
            n = ix.num_values[ix.data]
            first = row + np.cumsum(n) - n
            row += int(n.sum())
            if row > len(keep):
                break
            counts = np.add.reduceat(keep[:row].astype(np.int64), first) if len(n) else n
            counts = np.where(n > 0, counts, 0)
            held = counts > 0
            pages = np.flatnonzero(ix.data)
            self.use[c] = np.zeros(len(ix.kind), dtype=bool)
            self.use[c][pages[held]] = True
            self.skipped.of += len(n)
            self.skipped.pages += int((~held).sum())
            self.skipped.nbytes += int(ix.compressed[pages[~held]].sum())
            rows = np.repeat(held, n)
            covered[row - len(rows):row] = rows
        if row != len(keep):
            raise ValueError(f"the pages hold {row} rows, the selection {len(keep)}")
        self.keep, self.covered = keep, covered
        return self

    def page_bytes(self) -> int:
        return int(sum(ix.uncompressed[self._pages(c)].sum() for c, ix in enumerate(self.idx)))

    def estimate(self) -> tuple[int, int]:
        """The transient bytes of decoding every chunk at once, and of the costliest chunk."""
        costs = [self._cost(c) for c in range(len(self.idx))]
        return sum(costs), max(costs, default=0)

    def _cost(self, c: int) -> int:
        ix, use = self.idx[c], self.use[c]
        return transient_bytes(int(ix.num_values[use].sum()), int(ix.uncompressed[self._pages(c)].sum()))

    def _pages(self, c: int) -> np.ndarray:
        """The pages of chunk ``c`` to decompress: the data pages used, and its dictionary page
        if a used page is dictionary-coded."""
        ix, use = self.idx[c], self.use[c]
        want = use.copy()
        if np.isin(ix.encoding[use], DICTS).any():
            want |= ix.kind == DICT_PAGE
        return want

    def check_encodings(self) -> None:
        """NotDecodable where a data page's encoding is one the kernels lack for this column."""
        enc = np.unique(np.concatenate([ix.encoding[ix.data] for ix in self.idx] or [np.zeros(0, np.int16)]))
        _check_encodings(enc, self.spec)

    def decode(self, device: torch.device, budget: int | None = None, on_device=None
               ) -> tuple[Column, list[torch.Tensor]]:
        """The column (its kept rows after :meth:`select`) and the error codes to :func:`check`;
        in batches of whole chunks whose decoding holds at most ``budget`` bytes. An encoding the
        kernels lack is NotDecodable here, before anything is decompressed or launched."""
        self.check_encodings()
        C = len(self.idx)
        batches, cur, cost = [], [], 0
        for c in range(C):
            k = self._cost(c)
            if budget is not None and cur and cost + k > budget:
                batches.append(cur)
                cur, cost = [], 0
            cur.append(c)
            cost += k
        if cur:
            batches.append(cur)
        errs: list[torch.Tensor] = []
        parts = [self._decode(b, device, on_device, errs) for b in batches]
        parts = [p for p in parts if p is not None]
        if not parts:
            col = empty_column(self.spec.ltype, device)
        else:
            col = parts[0] if len(parts) == 1 else concat_columns(parts, unify=False)
        if self.keep is not None:
            sub = self.keep[self.covered]
            if not sub.all():
                col = col.filter(torch.from_numpy(sub).to(col.data.device))
        return col, errs

    def _decode(self, chunks: list[int], device, on_device, errs) -> Column | None:
        spec = self.spec
        lay = _layout(self, chunks)
        if lay.N == 0:
            return None
        buf = on_device.pages(lay.parts, lay.size, device, lay.unverified) if on_device is not None else None
        if buf is None:
            cuda = device.type == "cuda"
            host = torch.zeros(lay.size + PAD, dtype=torch.uint8, pin_memory=cuda)
            decompress_on_host(lay, memoryview(host.numpy()))
            buf = host.to(device, non_blocking=True) if cuda else host
        return _launch(buf, lay, spec, device, errs)


class _Layout:
    """A batch's pages: where each lies decompressed (known from the headers alone, before
    anything is decompressed, so nvCOMP can write every page straight to its place in one
    batch), the parts to decompress, and the descriptors of the data and dictionary pages."""

    def __init__(self):
        self.parts: list = []   # (bytes as stored, codec or None: copied as is, size once decompressed)
        self.size = 0
        self.unverified = 0     # compressed parts of pages without a page CRC (see :func:`_verified`)
        self.N = 0
        self.desc = np.zeros((8, 0), np.int64)
        self.enc = np.zeros(0, np.int16)

    def add(self, raw, codec: str | None, size: int, verified: bool = False) -> int:
        """Append a part; returns where it lies."""
        at = self.size
        self.parts.append((raw, codec, size))
        if codec is not None and codec != "UNCOMPRESSED" and not verified:
            self.unverified += 1
        self.size += size
        return at


def _layout(pages: KernelPages, chunks: list[int]) -> _Layout:
    lay = _Layout()
    rows, dicts, dict_host = [], [], []
    string = pages.spec.ltype.kind == "string"
    for local, c in enumerate(chunks):
        ix, data, codec = pages.idx[c], pages.chunks[c][0], pages.chunks[c][1]
        want = np.flatnonzero(pages._pages(c))
        if not len(want):
            continue
        unc = ix.uncompressed[want]
        at = lay.size + np.cumsum(unc) - unc
        lay.size += int(unc.sum())
        kind = ix.kind[want]
        # The parts to decompress (a C call a page: the decompression itself).
        mv = memoryview(data)
        for j, p in enumerate(want):
            raw = mv[ix.body[p]:ix.body[p] + ix.compressed[p]]
            ok = _verified(int(ix.crc[p]), raw)
            if ix.kind[p] == V2:
                lv = int(ix.rep_bytes[p] + ix.def_bytes[p])
                lay.parts.append((raw[:lv], None, lv))
                vc = codec if ix.compressed_values[p] else None
                lay.parts.append((raw[lv:], vc, int(unc[j]) - lv))
                lay.unverified += vc not in (None, "UNCOMPRESSED") and not ok
            else:
                lay.parts.append((raw, codec, int(unc[j])))
                lay.unverified += codec != "UNCOMPRESSED" and not ok
                if ix.kind[p] == DICT_PAGE and string:
                    dict_host.append((raw, codec, int(unc[j]), int(ix.num_values[p])))
        d = kind == DICT_PAGE
        if d.any():
            dicts.append(np.stack([at[d], at[d] + unc[d], ix.num_values[want][d],
                                   np.full(int(d.sum()), local, np.int64)]))
        dp = ~d
        n = ix.num_values[want][dp]
        a = at[dp]
        rep = ix.rep_bytes[want][dp]
        lv = rep + ix.def_bytes[want][dp]
        rows.append((np.stack([a, a + unc[dp], (kind[dp] == V1).astype(np.int64), a + rep, a + lv,
                               np.zeros_like(a), n, np.full(len(a), local, np.int64)]),
                     ix.encoding[want][dp]))
    if rows:
        lay.desc = np.concatenate([r[0] for r in rows], axis=1)
        lay.enc = np.concatenate([r[1] for r in rows])
        n = lay.desc[R_N]
        lay.desc[R_SLOT] = np.cumsum(n) - n
        lay.N = int(n.sum())
    lay.dicts = np.concatenate(dicts, axis=1) if dicts else np.zeros((4, 0), np.int64)
    lay.dict_host = dict_host
    lay.nchunks = len(chunks)
    return lay


def _verified(crc: int, raw) -> bool:
    """Whether the page's body as stored is known intact: its header carries a CRC-32 (Parquet's
    optional page checksum, over the body as stored) and the bytes match it. A mismatch is a
    corrupt page. nvCOMP's decoders trust their input (a garbled Snappy or Zstd stream made an
    H200 fault with an illegal address, or decode to other bytes without an error), so only
    verified pages go to the device unless ``device_decompress_unverified=true``."""
    if crc < 0:
        return False
    if zlib.crc32(raw) != crc:
        raise ValueError("corrupt page: its bytes do not match the page header's CRC")
    return True


def decompress_on_host(lay: _Layout, out: memoryview) -> None:
    """Every part decompressed with pyarrow's codecs into ``out``, back to back as the layout
    places them (one copy of each page, straight into the buffer that crosses to the device)."""
    at = 0
    for raw, codec, size in lay.parts:
        body = _decompress(raw, codec, size) if codec is not None else raw
        if len(body) != size:
            raise ValueError(f"a page decompressed to {len(body)} bytes, its header says {size}")
        out[at:at + size] = body
        at += size


def _check_encodings(enc: np.ndarray, spec) -> None:
    """NotDecodable, before anything is launched, for an encoding the kernels lack."""
    names = {NAMES.get(int(e), str(e)) for e in enc}
    if spec.ltype.kind == "string":
        other = names - {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
        if other:
            raise NotDecodable(f"string pages encoded {sorted(other)[0]} (not dictionary-coded)")
        return
    ok = {"PLAIN", "PLAIN_DICTIONARY", "RLE_DICTIONARY"}
    if spec.physical in ("INT32", "INT64"):
        ok |= {"DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"}
    elif spec.physical in ("FLOAT", "DOUBLE", "FIXED_LEN_BYTE_ARRAY"):
        ok |= {"BYTE_STREAM_SPLIT"}
    elif spec.physical == "BOOLEAN":
        ok |= {"RLE"}
    other = names - ok
    if other:
        raise NotDecodable(f"encoding {sorted(other)[0]} for {spec.physical}")


def _out_dtype(spec) -> torch.dtype:
    if spec.ltype.kind == "string":
        return torch.int32
    if spec.physical == "BOOLEAN":
        return torch.uint8
    return torch.int32 if spec.physical in ("INT32", "FLOAT") else torch.int64


def _dev(a: np.ndarray, device) -> torch.Tensor:
    return to_device(torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)), device)


def _launch(buf: torch.Tensor, lay: _Layout, spec, device, errs: list) -> Column:
    """Every kernel of one batch of a column (see the module's docstring), in launch order."""
    with _INTERPRETER if interpreted() else contextlib.nullcontext():
        return _launch_all(buf, lay, spec, device, errs)


def _launch_all(buf: torch.Tensor, lay: _Layout, spec, device, errs: list) -> Column:
    levels_k, hybrid, plain, split, delta, scatter = _kernels()
    N = lay.N
    has_def = spec.max_def > 0
    dt = _out_dtype(spec)
    string = spec.ltype.kind == "string"
    w = WIDTH.get(spec.physical, spec.type_length)
    # Every data page's descriptors in one copy; the groups of one encoding index them there.
    full = _dev(lay.desc, device)
    all_pages = Descriptors(full, int(lay.desc[R_N].max()))
    compact = torch.zeros(N, dtype=dt, device=device)
    levels = torch.zeros(N, dtype=torch.uint8, device=device) if has_def else None
    base = size = dvals = dictionary = None
    if (np.isin(lay.enc, DICTS)).any():
        d = lay.dicts
        if not string and ((d[2] if spec.physical == "BOOLEAN" else d[2] * w * 8) > (d[1] - d[0]) * 8).any():
            raise ValueError("corrupt page: a dictionary page cannot hold the values its header says")
        counts = np.zeros(lay.nchunks, np.int64)
        counts[d[3]] = d[2]
        firsts = np.cumsum(counts) - counts
        bs = _dev(np.concatenate([firsts, counts]), device)
        base, size = bs[:lay.nchunks], bs[lay.nchunks:]
        if string:
            dictionary = dict_strings.dictionary([(np.frombuffer(_decompress(r, c, s) if c else r, np.uint8)[:s], k)
                                                  for r, c, s, k in lay.dict_host])
        elif d.shape[1]:
            ddesc = Descriptors(_dev(np.stack([d[0], d[1], np.zeros_like(d[0]), d[0], d[0], firsts[d[3]], d[2],
                                               d[3]]), device), int(d[2].max()))
            dvals = torch.zeros(int(d[2].sum()), dtype=dt, device=device)
            e = torch.zeros(ddesc.pages, dtype=torch.int32, device=device)
            plain.decode(buf, ddesc, ddesc.at, ddesc.n, dvals, e, w if spec.physical != "BOOLEAN" else 1,
                         big_endian=spec.physical == "FIXED_LEN_BYTE_ARRAY", bits=spec.physical == "BOOLEAN")
            errs.append(e)
        else:
            dvals = torch.zeros(1, dtype=dt, device=device)
    for code in np.unique(lay.enc):
        sel = np.flatnonzero(lay.enc == code)
        if len(sel) == len(lay.enc):
            g = all_pages
        else:
            g = Descriptors(full.index_select(1, _dev(sel, device)), int(lay.desc[R_N][sel].max()))
        e = torch.zeros((4, g.pages), dtype=torch.int32, device=device)
        errs.append(e)
        vstart = torch.empty(g.pages, dtype=torch.int64, device=device)
        defs, defe = torch.empty_like(vstart), torch.empty_like(vstart)
        levels_k.locate(buf, g, has_def, defs, defe, vstart, e[0])
        counts = g.n
        if has_def:
            counts = torch.zeros(g.pages, dtype=torch.int64, device=device)
            hybrid.decode(buf, defs, defe, g.n, g.slot, levels, e[1], mode=hybrid.LEVELS, width=1, sums=counts)
        code = int(code)
        if code in DICTS:
            hybrid.decode(buf, vstart, g.end, counts, g.slot, compact, e[2],
                          mode=hybrid.CODES if string else hybrid.GATHER, width_first=True,
                          chunk=g.chunk, base=base, size=size, dictionary=dvals)
        elif code == PLAIN:
            plain.decode(buf, g, vstart, counts, compact, e[2], w if spec.physical != "BOOLEAN" else 1,
                         big_endian=spec.physical == "FIXED_LEN_BYTE_ARRAY", bits=spec.physical == "BOOLEAN")
        elif code == BSS:
            split.decode(buf, g, vstart, counts, compact, e[2], w, big_endian=spec.physical == "FIXED_LEN_BYTE_ARRAY")
        elif code == DELTA:
            delta.decode(buf, g, vstart, counts, compact, e[2])
        elif code == RLE:  # booleans: a 4-byte length, then a hybrid stream of width 1
            at = torch.clamp(vstart, max=buf.numel() - 4)
            ln = buf[at].long() | buf[at + 1].long() << 8 | buf[at + 2].long() << 16 | buf[at + 3].long() << 24
            s = vstart + 4
            en = torch.where((s <= g.end) & (s + ln <= g.end), s + ln, s)
            hybrid.decode(buf, s, en, counts, g.slot, compact, e[2], mode=hybrid.LEVELS, width=1,
                          sums=torch.zeros(g.pages, dtype=torch.int64, device=device))
    if has_def:
        out = torch.empty_like(compact)
        scatter.scatter(levels, all_pages, compact, out)
        valid = levels.bool()
    else:
        out, valid = compact, None
    if string:
        if N and not len(dictionary):  # every row NULL: codes 0 must index it
            dictionary = pa.array([""], pa.string())
        return Column(out, spec.ltype, valid, dictionary)
    return Column(_convert(out, spec), spec.ltype, valid)


def _convert(v: torch.Tensor, spec) -> torch.Tensor:
    """The kernels' integers (float bits, unscaled decimals) -> the sluice type's tensor."""
    t, lt = spec.arrow_type, spec.ltype
    if spec.physical == "BOOLEAN":
        return v.bool()
    if spec.physical == "FLOAT":
        f = v.view(torch.float32)
        return f if lt.kind == "float32" else f.double()
    if spec.physical == "DOUBLE":
        return v.view(torch.float64)
    if spec.physical == "INT32" and pa.types.is_unsigned_integer(t):
        return (v.long() & 0xFFFFFFFF).to(lt.torch_dtype)
    if pa.types.is_timestamp(t) and t.unit == "ms":
        return widen_timestamps(v, 1000, None)
    return v.to(lt.torch_dtype)


def check(errs: list[torch.Tensor]) -> None:
    """Raise ValueError for the first corrupt page the kernels found (one wait for the device)."""
    if not errs:
        return
    code = int(torch.cat([e.reshape(-1) for e in errs]).max())
    if code:
        raise ValueError(f"corrupt page: {ERRORS.get(code, f'error {code}')}")


def check_columns(errs: dict[str, list[torch.Tensor]]) -> tuple[str, str] | None:
    """(column, what is wrong) for the first column whose pages the kernels found corrupt, or
    None: every column's error codes read in one copy (one wait for the device per task)."""
    names = [c for c in errs if errs[c]]
    if not names:
        return None
    worst = torch.stack([torch.cat([e.reshape(-1) for e in errs[c]]).max() for c in names]).tolist()
    for c, code in zip(names, worst):
        if code:
            return c, f"corrupt page: {ERRORS.get(code, f'error {code}')}"
    return None


def decode_column(chunks: list[tuple], spec, device: torch.device, budget: int | None = None,
                  keep: np.ndarray | None = None) -> Column:
    """The column chunks ``chunks`` ((bytes as stored, codec[, value count the footer gives])
    per row group, in order) decoded, checked (with ``keep``: only those rows)."""
    pages = KernelPages(chunks, spec)
    if keep is not None:
        pages.select(keep)
    col, errs = pages.decode(device, budget)
    check(errs)
    return col
