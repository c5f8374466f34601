"""FORMAT_BYTES (and PG_SIZE_PRETTY, FORMATREADABLESIZE, FORMATREADABLEDECIMALSIZE), TRANSLATE,
CHR and ASCII against DuckDB: columns of random values with NULLs, int64's ends, every unit's edges,
multi-byte UTF-8 mapped, replaced and deleted, tiny chunks; DuckDB's errors as one line;
TRANSLATE's non-constant characters refused."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect

ALPHABET = ["a", "b", "c", "A", "é", "ß", "語", "😀", " ", "x"]


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    r = random.Random(5)
    n = 300
    edges = [0, 1, -1, 1023, 1024, 999, 1000, 2 ** 20 - 1, 2 ** 20, 10 ** 15, 2 ** 63 - 1, -2 ** 63, 2 ** 50 * 1023]
    b = [None if r.random() < .05 else r.choice(edges) if r.random() < .4 else
         r.randint(-2 ** r.randint(1, 63), 2 ** r.randint(1, 63) - 1) for _ in range(n)]
    s = [None if r.random() < .08 else "".join(r.choice(ALPHABET) for _ in range(r.randint(0, 9))) for _ in range(n)]
    c = [None if r.random() < .05 else r.choice([0, 65, 97, 233, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF,
                                                r.randint(1, 0xD7FF)]) for _ in range(n)]
    pq.write_table(pa.table({"i": pa.array(range(n), pa.int64()), "b": pa.array(b, pa.int64()), "s": s,
                             "c": pa.array(c, pa.int32())}), root / "t.parquet", row_group_size=47)
    return root


def _same(sql, root, connect, **settings):
    ours = connect(root, **settings).sql(sql).to_arrow()
    theirs = duckdb_connect(root).sql(sql).to_arrow_table()
    compare(ours, theirs)


def test_format_bytes(text_dir, connect):
    _same("select i, format_bytes(b), pg_size_pretty(b), formatReadableSize(b), formatReadableDecimalSize(b), "
          "format_bytes(b // 7), format_bytes(c), format_bytes(NULL), format_bytes(-9223372036854775808) from t",
          text_dir, connect)


def test_translate_and_chr(text_dir, connect):
    _same("select i, translate(s, 'abé', 'x'), translate(s, '😀a', '語😀'), translate(s, 'aab', 'xyz'), "
          "translate(s, '', 'q'), translate(s, 'a', NULL), chr(c), chr(c) || s, translate(chr(c), 'A', 'Ω'), "
          "ascii(s), ascii(chr(c)), ascii(''), ascii(NULL) from t",
          text_dir, connect)


def test_small_chunks(text_dir, connect):
    _same("select i, format_bytes(b), translate(upper(s), 'AB', 'ba'), chr(c) from t", text_dir, connect, chunk_rows=9)


@pytest.mark.parametrize("sql, error", [
    ("select chr(c - 1) from t", ExecutionError),
    ("select chr(c + 1114112) from t", ExecutionError),
    ("select chr(55296 + c % 2) from t", ExecutionError),
    ("select chr(b) from t", PlanError),
    ("select format_bytes(s) from t", PlanError),
])
def test_errors(sql, error, text_dir, connect):
    with pytest.raises(Exception):
        duckdb_connect(text_dir).sql(sql).fetchall()
    with pytest.raises(error):
        connect(text_dir).sql(sql).to_arrow()


def test_translate_of_columns_refused(text_dir, connect):
    with pytest.raises(UnsupportedError, match="TRANSLATE"):
        connect(text_dir).sql("select translate(s, s, 'x') from t").to_arrow()


def test_similar_to(text_dir, connect):
    """SIMILAR TO is DuckDB's regexp_full_match: the whole string must match the RE2 pattern."""
    _same("select i, s SIMILAR TO 'a.*', s NOT SIMILAR TO '[a-c]{2}', s SIMILAR TO '^a', s SIMILAR TO '.*(é|語)$', "
          "s SIMILAR TO '', s SIMILAR TO NULL, s SIMILAR TO 'a|b', upper(s) SIMILAR TO '(?i)[a-z ]*', "
          "regexp_full_match(s, 'a.*'), regexp_full_match(s, 'A.*', 'i'), regexp_full_match(s, 'A.*', 'ic'), "
          "regexp_full_match(s, 'a' || '.*'), regexp_full_match(s || chr(10) || 'x', '.*x'), regexp_matches(s, 'É', 'i'), "
          "regexp_matches(s, 'A', 'ic'), regexp_matches(s, 'A', 'ci') from t",
          text_dir, connect)


def test_format_fields(text_dir, connect):
    """FORMAT's {N} positions (an argument twice, one unused: NULL still makes NULL), {:d},
    {:0Nd}, {:Nd} and {:.Nf}, as DuckDB's fmt writes them."""
    _same("select i, format('{1}-{0}-{1}', s, c), format('{:05d}|{:3d}|{:d}', c, c % 100, b), "
          "format('{:.2f} {:.1f}', b / 7, (c % 1000)::decimal(9,2) / 8), format('{}', s, c), "
          "format('{{{}}}', c), format('{0}', s, NULL::int) from t", text_dir, connect)


@pytest.mark.parametrize("sql", ["select format('{:x}', c) from t", "select format('{:>5}', s) from t",
                                 "select format('{:,}', b) from t"])
def test_format_fields_refused(sql, text_dir, connect):
    with pytest.raises(UnsupportedError, match="FORMAT specifier"):
        connect(text_dir).sql(sql).to_arrow()
