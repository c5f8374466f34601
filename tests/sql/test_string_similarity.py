"""String similarity and distance functions (LEVENSHTEIN / EDITDIST3, DAMERAU_LEVENSHTEIN,
HAMMING / MISMATCHES, JARO_SIMILARITY, JARO_WINKLER_SIMILARITY with its score cutoff, JACCARD)
against DuckDB: two columns, a column and a constant, two constants; NULLs, empty strings,
multi-byte UTF-8 and combining marks (all count code points); DuckDB's errors as one line."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect

#: Characters of the generated strings: ASCII, two-, three- and four-byte UTF-8, a combining mark.
ALPHABET = ["a", "b", "c", "A", "é", "è", "ß", "語", "😀", "e\u0301", " "]


def _word(r: random.Random, max_len: int = 9) -> str:
    return "".join(r.choice(ALPHABET) for _ in range(r.randint(0, max_len)))


@pytest.fixture(scope="module")
def sim_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    r = random.Random(7)
    n = 400
    pool = [_word(r) for _ in range(40)] + ["", "kitten", "sitting", "martha", "marhta", "CA", "ABC", "héllo", "hello"]
    a = [None if r.random() < .1 else r.choice(pool) if r.random() < .6 else _word(r, 14) for _ in range(n)]
    b = [None if r.random() < .1 else r.choice(pool) if r.random() < .5 else _word(r, 14) for _ in range(n)]
    # equal lengths (code points) for HAMMING: b's letters shuffled or changed in place, never empty
    h = [None if x is None else ("x" if not x else "".join(r.choice([c, "a", "é"]) for c in x)) for x in a]
    a_h = [None if x is None else (x or "y") for x in a]
    pq.write_table(pa.table({"i": pa.array(range(n), pa.int64()), "a": a, "b": b, "h": h, "ah": a_h}),
                   root / "t.parquet", row_group_size=37)
    return root


FUNCTIONS = ["levenshtein", "editdist3", "damerau_levenshtein", "jaro_similarity", "jaro_winkler_similarity"]


def _same(sql, root, connect, **settings):
    ours = connect(root, **settings).sql(sql).to_arrow()
    theirs = duckdb_connect(root).sql(sql).to_arrow_table()
    compare(ours, theirs)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_two_columns_and_constants(fn, sim_dir, connect):
    _same(f"select i, {fn}(a, b), {fn}(b, a), {fn}(a, 'kitten'), {fn}('é😀a', b), {fn}(a, ''), {fn}(a, NULL), "
          f"{fn}('martha', 'marhta'), {fn}(a, a) from t", sim_dir, connect)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_small_chunks(fn, sim_dir, connect):
    _same(f"select i, {fn}(a, b), {fn}(upper(a), b || 'x') from t", sim_dir, connect, chunk_rows=5)


def test_hamming_and_jaccard(sim_dir, connect):
    _same("select i, hamming(ah, h), mismatches(h, ah), hamming('ab', 'ba'), hamming('é', 'x') from t", sim_dir, connect)
    _same("select i, jaccard(a, b), jaccard(b, 'aé😀') from t where a <> '' and b <> ''", sim_dir, connect)
    _same("select i, case when length(a) = length(b) and a <> '' then hamming(a, b) end, "
          "case when a <> '' and b <> '' then jaccard(a, b) else -1 end from t", sim_dir, connect)


@pytest.mark.parametrize("cutoff", ["0.5", "0.9", "0", "1", "1.5", "-1", "NULL", "0.75::double"])
def test_score_cutoff(cutoff, sim_dir, connect):
    _same(f"select i, jaro_similarity(a, b, {cutoff}), jaro_winkler_similarity(a, b, {cutoff}), "
          f"jaro_winkler_similarity('martha', b, {cutoff}) from t", sim_dir, connect)


@pytest.mark.parametrize("sql", [
    "select i from t where levenshtein(a, b) <= 2",
    "select levenshtein(a, 'kitten') as d, count(*) from t group by d",
    "select i from t where jaro_winkler_similarity(a, b) > 0.8 or damerau_levenshtein(a, b) = 1",
    "select x.i, y.i from t x join t y on levenshtein(x.a, y.b) = 0 and x.i < y.i",
    "select sum(levenshtein(a, b)), avg(jaro_similarity(a, b)), max(damerau_levenshtein(b, a)) from t",
])
def test_in_filters_groups_joins(sql, sim_dir, connect):
    _same(sql, sim_dir, connect)


def test_constants_alone(connect, tmp_path):
    _same("select levenshtein('kitten', 'sitting'), editdist3('', 'abc'), damerau_levenshtein('CA', 'ABC'), "
          "hamming('e\u0301', 'ab'), mismatches('abc', 'abd'), jaro_similarity('', ''), "
          "jaro_winkler_similarity('martha', 'marhta', 0.99), jaccard('aab', 'ab'), levenshtein(NULL, 'a'), "
          "jaccard(NULL, ''), hamming('a', NULL), jaro_similarity(NULL, NULL)", tmp_path, connect)


@pytest.mark.parametrize("sql, error", [
    ("select hamming(a, b) from t", ExecutionError),   # lengths differ
    ("select hamming('', '')", ExecutionError),
    ("select hamming('abc', 'ab')", ExecutionError),
    ("select jaccard(a, '') from t", ExecutionError),
    ("select jaccard('', 'a')", ExecutionError),
    ("select levenshtein(i, a) from t", PlanError),
    ("select jaro_similarity(a) from t", PlanError),
])
def test_errors_as_duckdb(sql, error, sim_dir, connect):
    with pytest.raises(Exception):
        duckdb_connect(sim_dir).sql(sql).fetchall()
    with pytest.raises(error) as ei:
        connect(sim_dir).sql(sql).to_arrow()
    assert "\n" not in str(ei.value)


@pytest.mark.parametrize("sql", [
    "select jaro_similarity(a, b, i / 100) from t",
    "select levenshtein(a, b, 3) from t",
])
def test_refused_in_one_line(sql, sim_dir, connect):
    with pytest.raises(UnsupportedError) as ei:
        connect(sim_dir).sql(sql).to_arrow()
    assert str(ei.value).startswith("unsupported: ") and "\n" not in str(ei.value)


def test_measures_against_simple_definitions():
    """The bit-parallel LEVENSHTEIN against the textbook dynamic programme, on random words."""
    from sluice.expr.functions.similarity import levenshtein

    def dp(x, y):
        prev = list(range(len(y) + 1))
        for i, cx in enumerate(x, 1):
            cur = [i]
            for j, cy in enumerate(y, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (cx != cy)))
            prev = cur
        return prev[-1]
    r = random.Random(3)
    for _ in range(2000):
        x, y = _word(r, 80), _word(r, 80)
        assert levenshtein(x, y) == dp(x, y), (x, y)
