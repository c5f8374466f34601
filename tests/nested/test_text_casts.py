"""CAST of text to LIST / STRUCT / MAP (DuckDB's reading of quotes, escapes, blanks, NULL and
brackets), nested values to VARCHAR, and casts between nested types (a STRUCT to a MAP): every
case runs the same SQL in sluice and in DuckDB 2.0 and compares answers, or checks that both
raise. Texts in a column are parsed once per distinct text (a chunk of 7 rows too); random
texts of brackets, quotes and backslashes check the reading against DuckDB's."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.datagen.events import generate_events
from sluice.errors import SluiceError, UnsupportedError
from sluice.expr.functions import text_to_nested
from sluice.testing.oracle import compare, duckdb_answer, duckdb_connect

CONSTANTS = [
    # lists: blanks, quotes, escapes, NULL and empty elements, nesting
    "select '[12,13,14]'::INT[], '[\"hello\", \"world\", \"!\"]'::VARCHAR[], CAST('[Hello World!]' AS VARCHAR[])",
    "select CAST('[[Hello World!], hello, universe]' AS VARCHAR[]), '[NULL, , NULL]'::varchar[], "
    "'[NULL, NULL,]'::varchar[], '[null,NuLl, \"null\"]'::varchar[]",
    "select CAST('[ [12,13,14], [8, 9], [4], [2, 1, 0] ]' AS INT[][]), "
    "CAST('[ [12,13,14], [8, 9], [4], [2,  1,  0] ]' AS VARCHAR[])",
    "select CAST('[ [[12,13,14], NULL], [[4]], NULL, [[2, NULL, 1, 0], [99]] ]' AS INT[][][])",
    "select CAST($$['hello','world', '!']$$ AS VARCHAR[]), CAST($$[\\'hello\\',\\'world\\', \\'!\\']$$ AS VARCHAR[])",
    "select CAST($$[can\\'t, you\\'re, i\\'m]$$ AS VARCHAR[]), CAST($$[\"]\", \"hello\", \"world\"]$$ AS VARCHAR[])",
    "select CAST($$[\"   hello\",\"          \\\"'  world\", \"!         \"]$$ AS VARCHAR[])",
    "select CAST('[   hello     ,   world      , !         ]' AS VARCHAR[]), '  [1]  '::INT[]",
    "select '[]'::VARCHAR[], '[]'::INT[][][], '[[1, 2, 3], [], [\t], [  ]]'::INT[][], "
    "'[[1, 2, 3], [], NULL, [NULL], [4, NULL]]'::INT[][]",
    "select $$[\\  \\\\abc\\\\ \\ , def, ghi]$$::VARCHAR[] a, a[1], len(a[1])",
    "select $$[\"\\  \\\\abc\\\\ \\ \", def, ghi]$$::VARCHAR[] a, a[1], len(a[1])",
    "select '[{\"bar\":\"\\\\\\\"\"}]'::STRUCT(bar VARCHAR)[], '[[\"a]\"], [b]]'::VARCHAR[]",
    # structs: named and unnamed, missing and NULL fields, nested
    "select '{a: 1, b: x}'::STRUCT(a INT, b VARCHAR), '{}'::STRUCT(a INT), '(1)'::STRUCT(a INT, b INT), "
    "'(x,)'::STRUCT(a VARCHAR, b VARCHAR), '( )'::STRUCT(a INT, b INT)",
    "select CAST('[{a:[12,13,14], b:\"x\", c:{a:[[a], [b, c]], b:[123]}}]' AS "
    "STRUCT(a INT[], b VARCHAR, c STRUCT(a VARCHAR[][], b INT[]))[])",
    "select '{\"a b\": 1, c: NULL}'::STRUCT(\"a b\" INT, c VARCHAR), '{a: {b: [1, NULL]}}'::STRUCT(a STRUCT(b INT[]))",
    "select CAST('{a: True, b: False, c:[true]}' AS STRUCT(a BOOL, b BOOL, c BOOL[], d STRUCT(a BOOL, b BOOL)))",
    # maps: NULL values, empty keys, nested keys and values
    "select '{k=1, j=NULL}'::MAP(VARCHAR, INT), '{=1}'::MAP(VARCHAR, INT), '{}'::MAP(INT, INT)",
    "select '{{1=100, 2=200}={3=c, 5=e}}'::MAP(MAP(INT, INT), MAP(INT, VARCHAR))",
    "select CAST('{ [12,     13,14]=val, [       8, 9         ]      =val}' AS MAP(INT[], VARCHAR))",
    # leaves of other types
    "select '[1.5, -2.25]'::DECIMAL(4,2)[], '[2022-12-2, 1929-01-25]'::DATE[], '[1.5, 1e3]'::DOUBLE[]",
    # TRY_CAST: a malformed text is NULL, an element that does not cast a NULL element
    "select TRY_CAST('Hello World' AS INT[]), TRY_CAST('[1,2,X,2]' AS INT[]), TRY_CAST('[345,oops,44,4.0]' AS INT[])",
    "select TRY_CAST('[3 0, 1]' AS INT[]), TRY_CAST('[12345678901]' AS INT[]), TRY_CAST('[1,2]' AS INT[][])",
    "select TRY_CAST('{x=1, 2=2}' AS MAP(INT, INT)), TRY_CAST('{a=1, a=2}' AS MAP(VARCHAR, INT)), "
    "TRY_CAST('{null=1}' AS MAP(VARCHAR, INT)), TRY_CAST('[123.5]' AS DECIMAL(3,1)[])",
    # a comment after the statement's ';' (DuckDB's tests write them so; was "one statement at a time")
    "SELECT $$[\",\"]$$::VARCHAR[], $$[\\,]$$::VARCHAR[], $$[\"\\\\\"]$$::VARCHAR[]; -- lists with only a comma",
    # a NULL text, and a text in a list constant
    "select CAST(NULL AS INT[]), [{'a': [4,5,6], 'b': 'abc'}, $${'a': [1,2,3],'b':}$$]",
    # nested values to VARCHAR, and back
    "select CAST('[ [12,13,14], [8, 9], [4], [2, 1, 0] ]' AS INT[][]) a, a::VARCHAR::INT[][] b, a = b",
    "select [1, NULL]::VARCHAR, {'a': 'x,y', 'b': NULL}::VARCHAR, ['null', '', ' x', 'a''b', 'c\\d']::VARCHAR, "
    "[true]::VARCHAR, ['2022-12-02'::DATE]::VARCHAR, [1.50]::VARCHAR",
    "select '{k=1, \"a b\"=NULL}'::MAP(VARCHAR, INT)::VARCHAR, {'A b': 1, 'it''s': [2]}::VARCHAR",
    # leaves as the scalar casts write them (floats: 1e-07, 1000000000000000.0; a DECIMAL(4,4): .5000; a
    # timestamp quoted)
    "select [1.5::DOUBLE, 1e-7, 1e15, 1e16, 2.5e-5, -0.0, 'nan'::DOUBLE, 'inf'::DOUBLE, NULL]::VARCHAR, "
    "[1.5::REAL, 16777217::REAL, 0.1::REAL]::VARCHAR, ['0.5'::DECIMAL(4,4), -0.5]::VARCHAR",
    "select '{1e15=1e-7, 2.5e-5=NULL}'::MAP(DOUBLE, FLOAT)::VARCHAR, {'t': '2020-01-01 10:00:00.5'::TIMESTAMP, "
    "'d': '2020-01-01'::DATE}::VARCHAR, '[2020-01-01 10:00:00]'::TIMESTAMP[]::VARCHAR",
    # between nested types: elements, fields, a STRUCT to a MAP
    "select [[1], [2::BIGINT]], [{'a': 1}, {'a': 2.5}], [['0.5'::DECIMAL(4,4)], [-0.5]]::VARCHAR, "
    "[{'a': ['0.5'::DECIMAL(4,4)]}, {'a': [-0.5]}]::VARCHAR, coalesce(NULL::BIGINT[], [1])",
    "select * from (values ({'a': 1}), ({'a': 3000000000})) v(s) order by s",
    "select [1, 2]::BIGINT[], TRY_CAST([1, 300] AS TINYINT[]), [[1], [2, 3]]::BIGINT[][], {'a': 1}::STRUCT(a VARCHAR)",
    "select {'name': 'Alice', 'city': 'NYC'}::MAP(VARCHAR, VARCHAR), {'age': 25, 'score': 100}::MAP(VARCHAR, VARCHAR)",
    "select {'1': 100, '2': 200}::MAP(INT, BIGINT), (NULL::STRUCT(name VARCHAR, age INT))::MAP(VARCHAR, VARCHAR), "
    "{'a': NULL, 'b': 'v'}::MAP(VARCHAR, VARCHAR), TRY_CAST({'n': 'x'} AS MAP(VARCHAR, INT))",
    "select {'person': {'name': 'Alice', 'age': 25}}::MAP(VARCHAR, STRUCT(name VARCHAR, age INT)), "
    "{'numbers': [1,2,3], 'letters': ['a','b']}::MAP(VARCHAR, VARCHAR[])",
]

ERRORS = [
    "SELECT CAST('{[3]}' AS INT[])", "SELECT CAST('Hello World' AS INT[])", "SELECT CAST('[3]]' AS INT[])",
    "SELECT CAST('[3],[[]' AS INT[][])", "SELECT CAST('[[3 1]]' AS INT[][])", "SELECT CAST('[[3,, 1]]' AS INT[][])",
    "SELECT CAST('][3]' AS INT[])", "SELECT CAST('[[[[[]][3][[]][][[[][]]]]]' AS INT[][][][])",
    "select '[{\"bar\":\"\\\\\"\"}]'::STRUCT(bar VARCHAR)[]", "select '[1,2]'::INT[][]",
    "select '{A: 1}'::STRUCT(a INT)", "select '{a: 1, a: 2}'::STRUCT(a INT)", "select '{a=1, a=2}'::MAP(VARCHAR, INT)",
    "select '{null=1}'::MAP(VARCHAR, INT)", "select '[123.5]'::DECIMAL(3,1)[]", "select '(1, 2, 3)'::STRUCT(a INT, b INT)",
    "select {'number': 'not_a_number'}::MAP(VARCHAR, INT)",
]

TEXTS = ["[1,2,2]", "[345,67865,44,4]", "[5,6,7]", None, "[NULL]", "[1,2,2]", "[ 8 ]", "[]", "[1, x]", "oops",
         "[5,6,7]", "[9]", "[3, 0]", "[1,2,2]"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("texts")
    structs = ["{a: 1, b: x}", "{b: 'y,z', a: NULL}", None, "(7, w)", "{a: 1, b: x}", "{}", "{a: 2}"]
    maps = ["{k=1, j=2}", "{}", None, "{k=NULL}", "{k=1, j=2}", "{\"x y\"=3}", "{a=4}"]
    pq.write_table(pa.table({"id": list(range(len(TEXTS))), "txt": TEXTS,
                             "s": (structs * 2)[:len(TEXTS)], "m": (maps * 2)[:len(TEXTS)]}),
                   d / "t.parquet", row_group_size=5)
    return d


@pytest.fixture(scope="module")
def duck(data):
    return duckdb_connect(data)


@pytest.fixture(scope="module", params=["default", "chunks7"])
def con(request, data):
    return sluice.connect(str(data), device="cpu", **({"chunk_rows": 7} if request.param == "chunks7" else {}))


@pytest.mark.parametrize("sql", CONSTANTS, ids=[f"c{i:02d}" for i in range(len(CONSTANTS))])
def test_constant_casts_answer_as_duckdb(sql, data, duck):
    con = sluice.connect(str(data), device="cpu")
    compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql))


@pytest.mark.parametrize("sql", ERRORS, ids=[f"e{i:02d}" for i in range(len(ERRORS))])
def test_casts_raise_where_duckdb_raises(sql, data, duck):
    with pytest.raises(duckdb.Error):
        duck.sql(sql).fetchall()
    with pytest.raises(SluiceError) as e:
        sluice.connect(str(data), device="cpu").sql(sql).to_arrow()
    assert not isinstance(e.value, UnsupportedError), e.value


COLUMNS = [
    "select id, try_cast(txt as INT[]) from t order by id",
    "select id, try_cast(txt as VARCHAR[]), try_cast(txt as BIGINT[][]) from t order by id",
    "select id from t where try_cast(txt as int[]) = [1, 2, 2] order by id",
    "select id, len(try_cast(txt as int[])) from t where len(try_cast(txt as int[])) < 4 order by id",
    "select id, s::STRUCT(a INT, b VARCHAR), m::MAP(VARCHAR, INT) from t order by id",
    "select id, (s::STRUCT(a INT, b VARCHAR)).b, m::MAP(VARCHAR, INT)::VARCHAR from t where id > 2 order by id",
    "select try_cast(txt as INT[]) as l, count(*) from t group by l",
    "select id, try_cast(txt as INT[])::VARCHAR, {'i': id, 'j': id * 2}::MAP(VARCHAR, BIGINT) from t order by id",
]


@pytest.mark.parametrize("sql", COLUMNS, ids=[f"col{i}" for i in range(len(COLUMNS))])
def test_column_casts_answer_as_duckdb(sql, con, duck):
    ours = con.sql(sql).to_arrow()
    compare(ours, duckdb_answer(duck, sql), [0] if "order by id" in sql else None)


def test_column_cast_error_as_duckdb(con, duck):
    sql = "select cast(txt as INT[]) from t"  # 'oops' and '[1, x]' do not cast
    with pytest.raises(duckdb.Error):
        duck.sql(sql).fetchall()
    with pytest.raises(SluiceError):
        con.sql(sql).to_arrow()


def test_many_scanned_texts_refused(con, duck, monkeypatch):
    """More texts for the scanner in a chunk than the bound: refused in one line, not read row by
    row; plain lists are split whole-column and not counted."""
    monkeypatch.setattr(text_to_nested, "MAX_SCANNED_TEXTS", 2)
    with pytest.raises(UnsupportedError, match="distinct texts"):
        con.sql("select s::STRUCT(a INT, b VARCHAR) from t").to_arrow()
    monkeypatch.setattr(text_to_nested, "MAX_SCANNED_TEXTS", 1)  # 'oops' alone is read by the scanner
    sql = "select id, try_cast(txt as INT[]) from t order by id"
    compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql), [0])


def test_plain_lists_column_whole(tmp_path):
    """6,000 distinct plain lists, more than MAX_SCANNED_TEXTS in one chunk (blanks, NULL and
    empty elements, empty lists, a bad element at times): split by Arrow's kernels, as DuckDB
    reads them."""
    rnd = random.Random(3)
    sp = lambda: rnd.choice(["", " ", "  ", "\t"])  # noqa: E731
    el = lambda: rnd.choice([str(rnd.randint(-10**6, 10**6)), "NULL", "null", "", "x1", str(rnd.randint(0, 9))])  # noqa: E731
    texts = [sp() + "[" + ",".join(sp() + el() + sp() for _ in range(rnd.randint(0, 6))) + "]" + sp() + f"{'' if i % 50 else ' '}"
             for i in range(6_000)]
    pq.write_table(pa.table({"id": list(range(len(texts))), "txt": texts}), tmp_path / "p.parquet")
    duck = duckdb.connect()
    duck.execute(f"create view p as select * from read_parquet('{tmp_path}/p.parquet')")
    con = sluice.connect(str(tmp_path), device="cpu")
    for sql in ["select id, try_cast(txt as INT[]), txt::VARCHAR[] from p order by id",
                "select count(*), sum(len(try_cast(txt as BIGINT[]))) from p"]:
        compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql), [0])


def _part(rnd: random.Random) -> str:
    r = rnd.random()
    x = ("NULL" if r < 0.1 else "" if r < 0.2 else "".join(rnd.choice("ab1 ") for _ in range(rnd.randint(1, 4)))
         if r < 0.6 else "".join(rnd.choice("[]{}(),'\"\\ a1=:") for _ in range(rnd.randint(1, 5))))
    r = rnd.random()
    if r < 0.3:
        return '"' + x.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "'" + x.replace("'", "\\'") + "'" if r < 0.45 else x


def _text(rnd: random.Random, depth: int = 2) -> str:
    sp = lambda: rnd.choice(["", "", " ", "  ", "\t"])  # noqa: E731
    g = rnd.randrange(3)
    if g == 0:
        items = [_text(rnd, depth - 1) if depth and rnd.random() < 0.6 else _part(rnd) for _ in range(rnd.randint(0, 3))]
        t = "[" + sp() + ("," + sp()).join(i + sp() for i in items) + "]"
    elif g == 1:
        t = "{" + ", ".join(sp() + f + sp() + ":" + sp() + (_text(rnd, 1) if f == "c" else _part(rnd))
                            for f in rnd.sample(["a", "b", "c"], rnd.randint(0, 3))) + "}"
    else:
        keys = [k for k in dict.fromkeys(_part(rnd) for _ in range(rnd.randint(0, 3))) if k != "NULL"]
        t = "{" + ", ".join(sp() + k + sp() + "=" + sp() + _part(rnd) for k in keys) + "}"
    if t and rnd.random() < 0.25:
        i = rnd.randrange(len(t))
        t = t[:i] + rnd.choice("[]{}(),'\"\\ a=:") + t[i + 1:]
    return t


def test_random_texts_read_as_duckdb_reads_them(tmp_path):
    """Texts of brackets, quotes, backslashes, separators and blanks (a character changed in a
    quarter of them): TRY_CAST to lists, structs and maps gives DuckDB's values and NULLs."""
    rnd = random.Random(7)
    texts = [_text(rnd) for _ in range(600)]
    pq.write_table(pa.table({"id": list(range(len(texts))), "txt": texts}), tmp_path / "r.parquet")
    duck = duckdb.connect()
    duck.execute(f"create view r as select * from read_parquet('{tmp_path}/r.parquet')")
    con = sluice.connect(str(tmp_path), device="cpu")
    for typ in ["VARCHAR[]", "VARCHAR[][][]", "STRUCT(a VARCHAR, b VARCHAR, c VARCHAR[])", "MAP(VARCHAR, VARCHAR)",
                "STRUCT(a VARCHAR)[]"]:
        sql = f"select id, try_cast(txt as {typ}) from r order by id"
        compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql), [0])


EVENTS = [  # were refused (tests/nested/test_nested_values.py), on the seeded events table
    "select event_id, [user, '{name: x}'] from events order by event_id",
    "select event_id, try_cast(kind as struct(a int)), tags::varchar, try_cast(user as varchar) from events "
    "order by event_id",
    "select kind, histogram(user.address.city)::varchar from events group by kind order by kind",
    "select event_id, items::varchar::struct(sku varchar, qty int, price decimal(10,2))[] = items, "
    "attrs::varchar::map(varchar, bigint) = attrs, user::varchar::struct(id bigint, name varchar, "
    "address struct(city varchar, zip int)) = user from events order by event_id",
    "select event_id, user.address::map(varchar, varchar), scores::double[] from events order by event_id",
    # nested values of one shape meet element by element (were "casts between nested types")
    "select event_id, coalesce(scores, [1]), case when event_id % 2 = 0 then scores else [1.5, null] end, "
    "[user.address, {'city': 'x', 'zip': 3000000000}] from events order by event_id",
    "select event_id, scores from events union all select -1, [2147483648, 1] order by event_id",
]


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("events")
    generate_events(300, d, seed=5, row_group_rows=100)
    return d


@pytest.mark.parametrize("sql", EVENTS, ids=[f"ev{i}" for i in range(len(EVENTS))])
def test_nested_columns_as_text_and_back(sql, events_dir):
    duck = duckdb.connect()
    duck.execute(f"create view events as select * from read_parquet('{events_dir}/events.parquet')")
    ours = sluice.connect(str(events_dir), device="cpu", chunk_rows=64).sql(sql).to_arrow()
    compare(ours, duckdb_answer(duck, sql), [0])


def test_cast_of_a_non_list_text_raises_as_duckdb(events_dir):
    sql = "select cast(kind as varchar[]) from events"
    duck = duckdb.connect()
    duck.execute(f"create view events as select * from read_parquet('{events_dir}/events.parquet')")
    with pytest.raises(duckdb.Error):
        duck.sql(sql).fetchall()
    with pytest.raises(SluiceError):
        sluice.connect(str(events_dir), device="cpu").sql(sql).to_arrow()


def test_printed_nested_floats_are_duckdbs_text():
    """The shell's and CSV output's text of a nested value (sluice.render.nested_text) writes
    floats as DuckDB's VARCHAR does (it wrote Arrow's 1e-7 and 1e+15)."""
    from sluice.render import nested_text
    sql = ("select [1.5, 1e-7, 1e15, 1e16, 2.5e-5, 'nan'::DOUBLE, '-inf'::DOUBLE, NULL] a, "
           "[1.5::REAL, 16777217::REAL, 0.1::REAL, NULL] b, {'x': 1e-5, 'y': 3::DOUBLE} c")
    duck = duckdb.connect()
    table = duckdb_answer(duck, sql)
    texts = duck.sql(f"select a::varchar, b::varchar, c::varchar from ({sql})").fetchall()[0]
    for i, want in enumerate(texts):
        assert nested_text(table.column(i).combine_chunks())[0].as_py() == want


@pytest.mark.parametrize("sql", ["select concat([42])", "select concat_ws(',', [1], [2])", "select {'a': 1} || 'x'"])
def test_nested_values_not_taken_as_text_by_string_functions(sql):
    """CONCAT([42]) is a list in DuckDB and CONCAT_WS joins a list's elements: refused, never
    the list's text (sluice answered '[42]' once nested values had a text)."""
    with pytest.raises(UnsupportedError):
        sluice.connect(device="cpu").sql(sql).to_arrow()


def test_concat_of_a_struct_is_its_text():
    sql = "select concat({'a': 1}, 'x'), concat('{a=1}'::MAP(VARCHAR, INT), 'y'), string_agg(x, ',') from (select [1] x)"
    compare(sluice.connect(device="cpu").sql(sql).to_arrow(), duckdb_answer(duckdb.connect(), sql))
