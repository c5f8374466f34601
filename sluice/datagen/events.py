"""A seeded table of nested ``events`` (the demo, tests and benchmark of LIST / STRUCT / MAP
columns): a struct within a struct, lists of strings, numbers and structs, and a map -- with
NULL and empty edges at every level.

Columns (``events.parquet``):

- ``event_id`` BIGINT (0..n-1), ``kind`` VARCHAR, ``ts`` TIMESTAMP;
- ``user`` STRUCT(id BIGINT, name VARCHAR, address STRUCT(city VARCHAR, zip INTEGER)): NULL
  users, NULL addresses, NULL cities;
- ``tags`` VARCHAR[]: NULL lists, empty lists, NULL elements;
- ``scores`` BIGINT[]: NULL, empty, NULL elements, negative values;
- ``items`` STRUCT(sku VARCHAR, qty INTEGER, price DECIMAL(10,2))[]: line items, some NULL
  items and NULL fields;
- ``attrs`` MAP(VARCHAR, BIGINT): NULL maps, empty maps, NULL values, keys k0..k5 (unique
  within a map).

Everything is drawn with NumPy from one seed and assembled as Arrow arrays (offsets, validity,
children): no loop over rows. Several row groups, so that tests meet chunk boundaries.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

EVENTS_TABLES = ("events",)

_KINDS = np.array(["click", "view", "buy", "share", "login"])
_WORDS = np.array(["red", "green", "blue", "sale", "new", "it's", "a,b", "", "NULL", "x y", "deep", "zeta"])
_CITIES = np.array(["Paris", "Lyon", "Oslo", "Quito", "São Paulo", "Kyiv"])
_NAMES = np.array(["ann", "bob", "chen", "dara", "eve", "femi", "gus"])


def _mask(rng: np.random.Generator, n: int, p: float) -> np.ndarray:
    return rng.random(n) < p


def _lists(rng: np.random.Generator, n: int, max_len: int, p_null: float, p_empty: float):
    """(int32 offsets, list NULL mask, total elements) of ``n`` lists of 1..max_len elements,
    some NULL and some empty."""
    sizes = rng.integers(1, max_len + 1, n)
    null = _mask(rng, n, p_null)
    sizes[null | _mask(rng, n, p_empty)] = 0
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    return offsets, null, int(offsets[-1])


def _strings(rng, pool: np.ndarray, n: int, p_null: float) -> pa.Array:
    return pa.array(pool[rng.integers(0, len(pool), n)], pa.string(), mask=_mask(rng, n, p_null))


def events_table(rows: int, seed: int = 0) -> pa.Table:
    """The events table of ``rows`` rows drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    n = rows
    event_id = pa.array(np.arange(n, dtype=np.int64))
    kind = _strings(rng, _KINDS, n, 0.0)
    ts = pa.array(np.datetime64("2024-01-01") + rng.integers(0, 365 * 86400, n).astype("timedelta64[s]"),
                  pa.timestamp("us"))

    address = pa.StructArray.from_arrays(
        [_strings(rng, _CITIES, n, 0.1), pa.array(rng.integers(1000, 99999, n).astype(np.int32))],
        fields=[pa.field("city", pa.string()), pa.field("zip", pa.int32())], mask=pa.array(_mask(rng, n, 0.1)))
    user = pa.StructArray.from_arrays(
        [pa.array(rng.integers(1, max(2, n // 10), n).astype(np.int64)), _strings(rng, _NAMES, n, 0.05), address],
        fields=[pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("address", address.type)],
        mask=pa.array(_mask(rng, n, 0.08)))

    off, null, m = _lists(rng, n, 4, 0.1, 0.1)
    tags = pa.ListArray.from_arrays(pa.array(off), _strings(rng, _WORDS, m, 0.05), mask=pa.array(null))

    off, null, m = _lists(rng, n, 6, 0.1, 0.1)
    scores = pa.ListArray.from_arrays(
        pa.array(off), pa.array(rng.integers(-50, 1000, m).astype(np.int64), mask=_mask(rng, m, 0.08)),
        mask=pa.array(null))

    off, null, m = _lists(rng, n, 3, 0.08, 0.08)
    cents = rng.integers(1, 100_000, m).astype(np.int64)
    words = np.stack([cents, cents >> 63], axis=1)  # decimal128: the low word, then its sign
    price = pa.Array.from_buffers(pa.decimal128(10, 2), m, [None, pa.py_buffer(np.ascontiguousarray(words))])
    item = pa.StructArray.from_arrays(
        [_strings(rng, np.array([f"sku{i}" for i in range(20)]), m, 0.05),
         pa.array(rng.integers(1, 10, m).astype(np.int32), mask=_mask(rng, m, 0.05)),
         price],
        fields=[pa.field("sku", pa.string()), pa.field("qty", pa.int32()), pa.field("price", pa.decimal128(10, 2))],
        mask=pa.array(_mask(rng, m, 0.05)))
    items = pa.ListArray.from_arrays(pa.array(off), item, mask=pa.array(null))

    off, null, m = _lists(rng, n, 5, 0.1, 0.1)
    row = np.repeat(np.arange(n), np.diff(off))
    start = rng.integers(0, 6, n)
    keys = np.char.add("k", ((start[row] + np.arange(m) - off[:-1][row]) % 6).astype(str)) if m else np.array([], str)
    attrs = pa.MapArray.from_arrays(pa.array(off), pa.array(keys, pa.string()),
                                    pa.array(rng.integers(0, 500, m).astype(np.int64), mask=_mask(rng, m, 0.1)),
                                    mask=pa.array(null))
    return pa.table({"event_id": event_id, "kind": kind, "ts": ts, "user": user, "tags": tags, "scores": scores,
                     "items": items, "attrs": attrs})


def generate_events(rows: int, out: str | Path, seed: int = 0, row_group_rows: int | None = None) -> Path:
    """Write ``OUT/events.parquet`` (``rows`` rows; row groups of ``row_group_rows``, by
    default a quarter of the rows, at least 1,000 and at most about a million)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = events_table(rows, seed)
    rg = row_group_rows or min(max(rows // 4, 1000), 1 << 20)
    pq.write_table(table, out / "events.parquet", row_group_size=rg)
    return out
