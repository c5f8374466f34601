"""LIKE / ILIKE / NOT LIKE with a pattern from a column (and with ESCAPE) against DuckDB: random
strings and patterns of `%`, `_`, escapes, backslashes, RE2 metacharacters, multi-byte and
case-folded letters, NULLs on either side; patterns that fold to constants ('a' || chr(0));
tiny chunks. More distinct patterns than one chunk matches by group is refused in one line."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect

LETTERS = ["a", "b", "A", "é", "É", "語", ".", "(", "\\"]
WILD = ["%", "_", "*%", "*_", "**"]


@pytest.fixture(scope="module")
def like_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("like")
    r = random.Random(17)
    n = 400
    s = [None if r.random() < .07 else "".join(r.choice(LETTERS) for _ in range(r.randint(0, 6))) for _ in range(n)]
    pats = ["".join(r.choice(LETTERS + WILD) for _ in range(r.randint(0, 4))) for _ in range(40)]
    p = [None if r.random() < .07 else r.choice(pats) for _ in range(n)]
    q = [x if x is None else x.rstrip("*") for x in p]  # patterns without a trailing escape
    pq.write_table(pa.table({"i": pa.array(range(n), pa.int64()), "s": s, "p": p, "q": q}),
                   root / "t.parquet", row_group_size=53)
    many = [f"%{k}%" for k in range(1100)]
    pq.write_table(pa.table({"s": [str(k) for k in range(1100)], "p": many}), root / "many.parquet")
    return root


def _same(sql, root, connect, **settings):
    ours = connect(root, **settings).sql(sql).to_arrow()
    theirs = duckdb_connect(root).sql(sql).to_arrow_table()
    compare(ours, theirs)


def test_pattern_columns(like_dir, connect):
    _same("select i, s LIKE p, s ILIKE p, s NOT LIKE p, s NOT ILIKE p, 'aba' LIKE p, upper(s) ILIKE lower(p), "
          "s LIKE q ESCAPE '*', s ILIKE q ESCAPE '*', NULL LIKE p, s LIKE ('a' || chr(0) || '%') from t",
          like_dir, connect)


def test_filters_and_small_chunks(like_dir, connect):
    _same("select i from t where s LIKE p or s ILIKE (p || '%')", like_dir, connect, chunk_rows=11)


def test_too_many_patterns_refused(like_dir, connect):
    with pytest.raises(UnsupportedError, match="distinct patterns"):
        connect(like_dir).sql("select count(*) from many where s LIKE p").to_arrow()
