"""LIKE through RE2 (``like_regex``): every pattern -- anchored or not, with ``_``, escapes,
regex metacharacters, newlines and non-ASCII letters -- matches the strings DuckDB's LIKE
matches. pyarrow's ``match_like`` does not after an escaped backslash (SQL ``LIKE 'a\\x%'``
matched nothing), which is why patterns with an escape never go to it; ``%a%b%`` patterns
go to RE2 for speed. Queries answer as DuckDB does."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sluice.expr.functions.strings import like_regex, like_search
from sluice.sql.literals import like_pattern
from sluice.testing.oracle import compare

ALPHABET = list("ab.*()[]{}?+^$|\\\n%_!") + ["é", "ß"]


def _strings(rng, n):
    return [None if rng.random() < 0.05 else "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 7)))
            for _ in range(n)]


def _sql_pattern(rng):
    return "".join(rng.choice(ALPHABET[:-4] + ["%", "%", "é"]) for _ in range(rng.randint(0, 6)))


def test_regex_matches_what_duckdb_likes():
    rng = random.Random(7)
    strings = _strings(rng, 1500)
    arr = pa.array(strings)
    con = duckdb.connect()
    con.register("t", pa.table({"i": range(len(strings)), "s": arr}))
    tried = 0
    for _ in range(300):
        sql_pattern = _sql_pattern(rng)
        escape = rng.choice([None, "\\", "!"])
        if escape is not None and sql_pattern.endswith(escape) and not sql_pattern.endswith(escape * 2):
            continue  # a pattern ending in its escape character is an error in both engines
        try:
            pattern = like_pattern(sql_pattern, escape)
        except Exception:  # noqa: BLE001 - the same error DuckDB raises
            continue
        quoted = sql_pattern.replace("'", "''")
        clause = f"s like '{quoted}'" + (f" escape '{escape}'" if escape else "")
        try:
            want = [r[0] for r in con.execute(f"select {clause} from t order by i").fetchall()]
        except duckdb.Error:
            continue
        tried += 1
        got = pc.match_substring_regex(arr, like_regex(pattern)).to_pylist()
        assert got == want, (sql_pattern, escape, pattern, like_regex(pattern))
    assert tried > 150


def test_match_like_is_kept_only_where_it_is_right_and_fast():
    assert like_search("a\\\\x%") is not None  # an escape: never pyarrow's
    assert like_search("%a%b%") == "(?s)a.*b"
    for pattern in ["a%", "%a", "%", "%%", "%a_b%", "a%b", ""]:
        assert like_search(pattern) is None, pattern


def test_queries_answer_as_duckdb(tmp_path, connect):
    rng = random.Random(3)
    pq.write_table(pa.table({"s": _strings(rng, 2000)}), tmp_path / "t.parquet")
    con = connect(tmp_path)
    for pat in ["%a%", "%.%b%", "%(%)%", "%\\%", "%é%ß%", "%a%a%a%", "%\n%", "a\\b%", "\\_%", "%!_a' escape '!"]:
        for neg in ("", "not "):
            for op in ("like", "ilike"):
                sql = f"select count(*) c, min(s) m from t where s {neg}{op} '{pat}'"
                ours = con.sql(sql).to_arrow()
                theirs = duckdb.sql(sql.replace("from t", f"from '{tmp_path / 't.parquet'}'")).to_arrow_table()
                compare(ours, theirs, [])
