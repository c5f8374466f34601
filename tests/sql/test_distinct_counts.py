"""COUNT(DISTINCT x) of a string with no GROUP BY (``distinct_counts``): the values' hash pieces
are deduplicated and counted, with no codes and no unified dictionary. The answers are DuckDB's
with the setting on and off, in small pieces (every piece path taken), with NULLs, filtered
dictionaries (entries no row uses), dictionary-encoded and plain strings, spilled pages and
aggregates beside it."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice.exec.hash_aggregate as hash_aggregate
import sluice.kernels.encode as encode
from sluice.testing.oracle import compare

N = 30_000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(11)
    root = tmp_path_factory.mktemp("distinct_counts")
    words = np.array([f"w{i:05d}" + "x" * (i % 23) for i in range(12_000)])
    many = rng.choice(words, N)                      # about 11,500 distinct, repeats across chunks
    few = rng.choice(["", "a", "bb", "a longer string than eight bytes", "é"], N)
    t = pa.table({"s": pa.array(many, mask=rng.random(N) < 0.05),
                  "f": pa.array(few),
                  "v": pa.array(rng.integers(0, 100, N))})
    pq.write_table(t, root / "t.parquet", row_group_size=4_000, use_dictionary=["f"])
    pq.write_table(t, root / "d.parquet", row_group_size=4_000, use_dictionary=True)
    return root


QUERIES = [
    "select count(distinct s) as c from {t}",
    "select count(distinct s) as c, count(*) as n, sum(v) as sv, count(s) as cs from {t}",
    "select count(distinct s) as c, count(distinct f) as cf, count(distinct v) as cv from {t}",
    "select count(distinct s) as c from {t} where v < 3",                # dictionaries mostly unused
    "select count(distinct f) as c from {t} where f <> 'a'",
    "select count(distinct s) as c from {t} where v < 0",                # no rows
    "select count(distinct s) as c, min(distinct s) as m from {t}",      # grouped: not only a count
    "select count(distinct s || f) as c, count(distinct upper(s)) as u from {t}",
]


@pytest.fixture(params=["pieces", "one piece"])
def pieces(request, monkeypatch):
    if request.param == "pieces":  # tiny pieces: the parallel path, many arrays to take from
        monkeypatch.setattr(encode, "PARALLEL_MIN", 1_000)
        monkeypatch.setattr(encode, "PIECE_ROWS", 512)
        monkeypatch.setattr(encode, "TAKE_ROWS_MIN", 1)
    return request.param


@pytest.mark.parametrize("table", ["t", "d"])
@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("forced", [{}, {"force_spill": True}, {"chunk_rows": 1 << 20}])
def test_answers_equal_duckdbs(data, table, on, forced, pieces, connect):
    con = connect(data, **{"distinct_counts": on, "chunk_rows": 3_000, **forced})
    for q in QUERIES:
        theirs = duckdb.sql(q.format(t=f"'{data / table}.parquet'")).to_arrow_table()
        compare(con.sql(q.format(t=table)).to_arrow(), theirs, [])


def test_partitions_split_again_count_apart(data, connect, monkeypatch):
    """A DISTINCT partition too big to merge is split on further hash bits, counted part by
    part: every value in one part only, so the parts' counts add up."""
    import sluice.exec.materialize as materialize
    real = materialize.Partition.fits
    real_count = hash_aggregate.count_distinct_strings
    monkeypatch.setattr(materialize.Partition, "fits", lambda self, f: self.mat.level >= 1 and real(self, f))
    calls = []
    monkeypatch.setattr(hash_aggregate, "count_distinct_strings", lambda arrs: calls.append(1) or real_count(arrs))
    con = connect(data, chunk_rows=3_000)
    for q in (QUERIES[1], QUERIES[3]):
        calls.clear()
        theirs = duckdb.sql(q.format(t=f"'{data / 't'}.parquet'")).to_arrow_table()
        compare(con.sql(q.format(t="t")).to_arrow(), theirs, [])
        assert len(calls) > 8  # counted part by part


def test_only_counts_without_keys_take_the_path(data, connect, monkeypatch):
    calls = []
    real = hash_aggregate.count_distinct_strings

    def spy(arrs):
        calls.append(sum(len(a) for a in arrs))
        return real(arrs)

    monkeypatch.setattr(hash_aggregate, "count_distinct_strings", spy)
    con = connect(data, chunk_rows=3_000)
    con.sql("select count(distinct s) as c, sum(v) as sv from t").to_arrow()
    assert len(calls) == 1 and calls[0] >= 11_000
    for sql in ("select count(distinct s) as c, max(distinct s) as m from t",
                "select f, count(distinct s) as c from t group by f",
                "select count(distinct v) as c from t"):
        calls.clear()
        con.sql(sql).to_arrow()
        assert not calls, sql
    connect(data, chunk_rows=3_000, distinct_counts=False).sql("select count(distinct s) as c from t").to_arrow()
    assert not calls


def test_count_distinct_strings_counts_across_arrays(monkeypatch):
    monkeypatch.setattr(encode, "PARALLEL_MIN", 64)
    monkeypatch.setattr(encode, "PIECE_ROWS", 16)
    monkeypatch.setattr(encode, "TAKE_ROWS_MIN", 1)
    rng = np.random.default_rng(5)
    pool = [f"s{i}" * (1 + i % 5) for i in range(300)] + ["", "a", "abcdefgh", "abcdefghi"]
    arrs = [pa.array(rng.choice(pool, int(m))).slice(1) for m in rng.integers(1, 200, 12)]
    arrs.append(pa.array([], pa.string()))
    expected = len(set(pa.concat_arrays(arrs).to_pylist()))
    assert encode.count_distinct_strings(arrs) == expected
    assert encode.count_distinct_strings([]) == 0


def test_unique_strings_across_arrays(monkeypatch):
    monkeypatch.setattr(encode, "PARALLEL_MIN", 64)
    monkeypatch.setattr(encode, "PIECE_ROWS", 16)
    monkeypatch.setattr(encode, "TAKE_ROWS_MIN", 1)
    rng = np.random.default_rng(6)
    pool = [f"s{i}" * (1 + i % 9) for i in range(300)] + ["", "a", "abcdefgh", "abcdefghi"]
    arrs = [pa.array(rng.choice(pool, int(m))).slice(1) for m in rng.integers(1, 200, 12)]
    out = encode.unique_strings(arrs)
    assert sorted(out.to_pylist()) == sorted(set(pa.concat_arrays(arrs).to_pylist()))
    assert len(encode.unique_strings([])) == 0


def test_piece_hashes_equal_for_equal_strings():
    """Equal strings hash equal wherever they lie in their buffers (a slice, the buffer's end,
    shorter than a word, between 8 and 16 bytes)."""
    strings = ["", "a", "abcdefg", "abcdefgh", "abcdefghi", "x" * 15, "y" * 16, "z" * 17 + "é", "w" * 40]
    a = pa.array(strings)
    b = pa.array(["pad", *reversed(strings)]).slice(1)
    ha, hb = encode.piece_hashes(a).tolist(), encode.piece_hashes(b).tolist()
    assert ha == hb[::-1]
    assert len(set(ha)) == len(strings)
    assert encode.piece_hashes(pa.array([], pa.string())).numel() == 0


@pytest.mark.parametrize("table", ["t", "d"])
def test_compacted_before_spilled(data, table, pieces, connect):
    """Out of memory, a counted DISTINCT's largest partition is deduplicated in memory before it
    is spilled (its repeats dropped): the answer is DuckDB's and partitions were compacted."""
    con = connect(data, chunk_rows=3_000, host_memory_limit=400_000)
    for q in QUERIES[:2]:
        rel = con.sql(q.format(t=table))
        theirs = duckdb.sql(q.format(t=f"'{data / table}.parquet'")).to_arrow_table()
        compare(rel.to_arrow(), theirs, [])
        _, ctx = rel.last_run
        assert sum(r.memory.compactions for r in ctx.runs.values() if r.memory is not None) > 0
