"""String slices by per-row positions against DuckDB: ``s[a:b]`` (either bound left out),
ARRAY_SLICE / LIST_SLICE of a string, SUBSTRING(s, a[, b]) and ``s[a]`` where the positions are
columns or constants; negative, zero and out-of-range positions, NULL strings and positions,
empty strings, multi-byte UTF-8 (code points count); tiny chunks; DuckDB's range errors."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import ExecutionError
from sluice.testing.oracle import compare, duckdb_connect

ALPHABET = ["a", "b", "Z", "é", "ß", "語", "😀", " "]


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("slices")
    r = random.Random(11)
    n = 300
    positions = [-9, -5, -3, -2, -1, 0, 1, 2, 3, 4, 6, 9, 12]
    s = [None if r.random() < .08 else "".join(r.choice(ALPHABET) for _ in range(r.randint(0, 10))) for _ in range(n)]
    a = [None if r.random() < .05 else r.choice(positions) for _ in range(n)]
    b = [None if r.random() < .05 else r.choice(positions) for _ in range(n)]
    big = [r.choice([2 ** 32 - 1, -2 ** 32, 5, -2 ** 31]) for _ in range(n)]
    pq.write_table(pa.table({"i": pa.array(range(n), pa.int64()), "s": s, "a": pa.array(a, pa.int64()),
                             "b": pa.array(b, pa.int32()), "big": pa.array(big, pa.int64())}),
                   root / "t.parquet", row_group_size=41)
    return root


def _same(sql, root, connect, **settings):
    ours = connect(root, **settings).sql(sql).to_arrow()
    theirs = duckdb_connect(root).sql(sql).to_arrow_table()
    compare(ours, theirs)


def test_bracket_slices(slice_dir, connect):
    _same("select i, s[a:b], s[:3], s[:-2], s[:b], s[:b + 1], s[a:], s[2:b], s[a:3], s[-3:-1], s[0:0], 'héllo😀'[a:b], s[a:NULL], s[a] "
          "from t order by i", slice_dir, connect)


def test_array_and_list_slice(slice_dir, connect):
    _same("select i, array_slice(s, a, b), list_slice(s, b, a), array_slice(s, -2, 9), "
          "list_slice('語a😀b', a, -1), array_slice(s, NULL, 2) from t order by i", slice_dir, connect)


def test_substring_by_columns(slice_dir, connect):
    _same("select i, substring(s, a, b), substring(s, a), substring(s, 2, b), substring(s, a, 2), "
          "substring('MotörHead', a, b), substring(s from b for a), substring(s, a, big), substring(s, big) "
          "from t order by i", slice_dir, connect)


def test_substring_default_length(slice_dir, connect):
    """No length is 2**32 - 1 in DuckDB: from -2**32 the last character is left out."""
    _same("select i, substring(s, -4294967296), substring('abcdef', -4294967296), substring(s, -4294967295), "
          "substring(s, -4294967296, 4294967295) from t order by i", slice_dir, connect)


def test_small_chunks(slice_dir, connect):
    _same("select i, s[a:b], substring(upper(s), a, b), array_slice(s || 'x', b, a) from t order by i",
          slice_dir, connect, chunk_rows=7)


@pytest.mark.parametrize("sql", ["select substring(s, a - 4294967297, 1) from t",
                                 "select substring(s, a, -4294967297 + b) from t",
                                 "select substring(s, a, big + 4294967296) from t"])
def test_range_errors(sql, slice_dir, connect):
    with pytest.raises(Exception, match="Substring"):
        duckdb_connect(slice_dir).sql(sql).fetchall()
    with pytest.raises(ExecutionError, match="Substring"):
        connect(slice_dir).sql(sql).to_arrow()


def test_null_strings_never_fail(slice_dir, connect):
    _same("select substring(NULL, a - 4294967297, b) x, substring(CASE WHEN s IS NULL THEN s END, a - 4294967297) y "
          "from t", slice_dir, connect)
