"""REGEXP_EXTRACT_ALL's forms against DuckDB: a pattern that matches empty text (DuckDB takes an
empty match where a non-empty one ended, RE2's global replace does not), the list-of-names form
(a list of structs, one field per group, NULL where a group took no part), the 'c' / 'i'
options, NULL patterns and groups, DuckDB's binder errors as one-line plan errors."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect

ALPHABET = ["a", "b", "h", "i", "x", "1", "2", " ", "щ", "A", "H"]


@pytest.fixture(scope="module")
def rx_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("rx")
    r = random.Random(11)
    n = 300
    s = [None if r.random() < .1 else "".join(r.choice(ALPHABET) for _ in range(r.randint(0, 8))) for _ in range(n)]
    s[:6] = ["", "hi", "green", "aXbX", "a1 b2 c", None]
    pq.write_table(pa.table({"i": pa.array(range(n), pa.int64()), "s": s}), root / "t.parquet", row_group_size=41)
    return root


def _same(sql, root, connect, **settings):
    compare(connect(root, **settings).sql(sql).to_arrow(), duckdb_connect(root).sql(sql).to_arrow_table())


EMPTY_PATTERNS = ["e*", "X?", "a|", "(h|i)?", "[ab]*", "(a)?(b)?", "x*?", "щ*", "(1|2)*"]


@pytest.mark.parametrize("pattern", EMPTY_PATTERNS)
def test_patterns_matching_empty_text(pattern, rx_dir, connect):
    _same(f"select i, regexp_extract_all(s, '{pattern}') from t", rx_dir, connect)


@pytest.mark.parametrize("pattern,group", [("(h|i)?", 1), ("(a)?(b)?", 2), ("(a*)(b)", 1), ("(a)|(b)", 2)])
def test_a_group_of_patterns_matching_empty_text(pattern, group, rx_dir, connect):
    _same(f"select i, regexp_extract_all(s, '{pattern}', {group}) from t", rx_dir, connect, chunk_rows=7)


@pytest.mark.parametrize("pattern,names", [
    (r"(\w)(\d)?", "['l', 'd']"), ("(h|i)?", "['ch']"), ("(a)?(b)?", "['x', 'y']"), ("((a)(b))", "['o', 'f', 's']"),
    ("(a*)(b)", "['as']"), ("(щ|a)(.)", "['first', 'second']")])
def test_names_give_structs(pattern, names, rx_dir, connect):
    _same(f"select i, regexp_extract_all(s, '{pattern}', {names}) from t", rx_dir, connect)


def test_names_with_options_and_use_of_the_structs(rx_dir, connect):
    _same("select i, regexp_extract_all(s, '(a)(h)?', ['a', 'h'], 'i'), regexp_extract_all(s, 'h', 0, 'ci'), "
          "regexp_extract_all(s, 'h', 0, 'ic') from t", rx_dir, connect)
    _same("select len(regexp_extract_all(s, '(a)(b)?', ['a', 'b'])) as n, count(*) from t group by n",
          rx_dir, connect)


def test_null_pattern_or_group_is_null(rx_dir, connect):
    _same("select i, regexp_extract_all(s, NULL), regexp_extract_all(s, 'a', NULL) from t", rx_dir, connect)


@pytest.mark.parametrize("sql", [
    "select regexp_extract_all(s, '(a)(b)', []) from t",
    "select regexp_extract_all(s, '(a)(b)', ['x', 'X']) from t",
    "select regexp_extract_all(s, '(a)(b)', ['x', 'y', 'z']) from t",
    "select regexp_extract_all(s, '(a)(b)', ['x', NULL]) from t",
    "select regexp_extract_all(s, NULL, ['g']) from t",
])
def test_duckdb_binder_errors(sql, rx_dir, connect):
    with pytest.raises(Exception):
        duckdb_connect(rx_dir).sql(sql).fetchall()
    with pytest.raises(PlanError) as ei:
        connect(rx_dir).sql(sql).to_arrow()
    assert "\n" not in str(ei.value)


@pytest.mark.parametrize("sql", ["select regexp_extract_all(s, 'a*$') from t",
                                 "select regexp_extract_all(s, '\\b') from t",
                                 "select regexp_extract_all(s, 'a', 0, 's') from t"])
def test_refused_forms(sql, rx_dir, connect):
    with pytest.raises(UnsupportedError):
        connect(rx_dir).sql(sql).to_arrow()


def test_a_group_the_pattern_lacks(rx_dir, connect):
    # DuckDB: [] where nothing matches (a negative group: always), an error where something does
    _same("select i, regexp_extract_all(s, 'a', -1), regexp_extract_all(s, '(a)', -2), "
          "regexp_extract_all(s, 'q', 1), regexp_extract_all(s, '(q)(r)', 3) from t", rx_dir, connect)
    _same("select i, try(regexp_extract_all(s, 'a', 1)), try(regexp_extract_all(s, 'h*', 2)) from t", rx_dir, connect)
    for sql in ("select regexp_extract_all(s, 'a', 1) from t", "select regexp_extract_all(s, '(h)', 2) from t"):
        with pytest.raises(Exception, match="Cannot access group"):
            duckdb_connect(rx_dir).sql(sql).fetchall()
        with pytest.raises(Exception, match="Cannot access group"):
            connect(rx_dir).sql(sql).to_arrow()
