"""String MIN / MAX by group over plain strings (a dictionary entry per row): with many rows per
group, only rows whose first byte is their group's best first byte are compared further. The answers are DuckDB's with that pass and without it, at chunks large enough for it
and too small for it, for the strings that order unlike their first byte suggests: "" (below
"\\x00"), strings that start with a NUL byte, multi-byte UTF-8, ties on the first byte and on
the first 8 bytes, NULL values and NULL keys, and groups holding only "" or only NULL."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice.exec.string_prefix as string_prefix
from sluice.testing.oracle import compare

N = 30_000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(11)
    root = tmp_path_factory.mktemp("string_minmax")
    alphabet = np.array(list("ab z\u00e9\u00ff\x00"), dtype=object)
    lengths = rng.integers(0, 12, N)
    s = np.array(["".join(rng.choice(alphabet, n)) for n in lengths], dtype=object)
    s[rng.random(N) < 0.05] = None
    s[rng.random(N) < 0.01] = "aaaaaaaaX"  # ties on the first 8 bytes with the next two
    s[rng.random(N) < 0.01] = "aaaaaaaaY"
    s[rng.random(N) < 0.01] = "aaaaaaaa"
    k = rng.choice(["p", "q", "r", "s"], N).astype(object)
    k[rng.random(N) < 0.02] = None
    k[rng.choice(N, 50, replace=False)] = "empty"
    s[k == "empty"] = ""
    k[rng.choice(N, 50, replace=False)] = "nulls"
    s[k == "nulls"] = None
    k[-3:] = "nul"  # only strings starting with a NUL byte, at the very end
    s[-3:] = ["\x00b", "\x00", "\x00a"]
    pq.write_table(pa.table({"k": pa.array(k, pa.string()), "s": pa.array(s, pa.string()),
                             "f": pa.array(rng.integers(0, 3, N))}), root / "t.parquet", row_group_size=N // 3)
    return root


QUERIES = [
    "select k, min(s) as lo, max(s) as hi from {t} group by k",
    "select min(s) as lo, max(s) as hi from {t}",
    "select k, f, max(s) as hi, min(s) as lo from {t} where f <> 1 group by k, f",
    "select k, max(s) as hi from {t} where s < 'b' group by k",
]


@pytest.mark.parametrize("first_byte", [True, False])
@pytest.mark.parametrize("forced", [{}, {"chunk_rows": 5000}, {"chunk_rows": 1000}])
def test_answers_equal_duckdbs(data, first_byte, forced, connect):
    con = connect(data, minmax_first_byte=first_byte, **forced)
    for q in QUERIES:
        theirs = duckdb.sql(q.format(t=f"'{data / 't.parquet'}'")).to_arrow_table()
        compare(con.sql(q.format(t="t")).to_arrow(), theirs, [])


def test_the_first_byte_pass_runs_and_keeps_few_rows(data, connect, monkeypatch, device):
    """Asserted to run (and to cut the rows), so that the answers above test it (a CPU only)."""
    if device != "cpu":
        pytest.skip("the first-byte pass runs on a CPU only")
    kept = []
    real = string_prefix._prefix_keys

    def spy(d, at=None, **kw):
        if at is not None:
            kept.append((len(at), len(d)))
        return real(d, at, **kw)
    monkeypatch.setattr(string_prefix, "_prefix_keys", spy)
    q = "select k, max(s) as hi from t group by k"
    connect(data).sql(q).to_arrow()
    assert kept and all(k < n // 2 for k, n in kept)
    kept.clear()
    connect(data, minmax_first_byte=False).sql(q).to_arrow()
    assert not kept


def test_forced_onto_every_chunk(data, connect, monkeypatch):
    """On chunks of a few rows, in many groups, over dictionary-encoded strings too (as the
    fuzzer forces it)."""
    for name, value in (("FIRST_BYTE_MIN_ROWS", 0), ("FIRST_BYTE_ROWS_PER_GROUP", 0),
                        ("FIRST_BYTE_MIN_ENTRIES_PER_ROW", 0), ("FIRST_BYTE_MAX_GROUPS", 1 << 30)):
        monkeypatch.setattr(string_prefix, name, value)
    con = connect(data, chunk_rows=29)  # (~1,000 chunks)
    for q in [*QUERIES, "select f, k, max(s) as a from {t} group by f, k"]:
        theirs = duckdb.sql(q.format(t=f"'{data / 't.parquet'}'")).to_arrow_table()
        compare(con.sql(q.format(t="t")).to_arrow(), theirs, [])
