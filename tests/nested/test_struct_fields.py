"""A struct's fields read alone (:mod:`sluice.plan.rules.struct_fields`): ``s.c.d`` scans the
leaf ``s.c.d``, not the whole of ``s``. Answers equal DuckDB's with NULL structs, NULL inner
structs and NULL fields, lists and maps inside the struct, string fields whose dictionaries
change between row groups (and one whose pages fall back to plain inside a row group), under
every forced path (tiny chunks, spilling, the device decoder's hand-over, the rule off); the
bytes read drop; a column used whole is read whole."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.io.parquet.decoders import _dictionary_fields
from sluice.testing.oracle import compare, duckdb_answer, duckdb_connect

ROWS = 600

SETTINGS = {"default": {}, "chunks7": {"chunk_rows": 7}, "spilled": {"chunk_rows": 64, "force_spill": True},
            "device_decoder": {"decoder": "device"}, "rule_off": {"disabled_rules": "struct_fields"}}

QUERIES = [
    "select id, s.a, s.c.d, s.c.e, s['b'] from t order by id",
    "select s.b, count(*), sum(s.c.d), count(s.c.e) from t group by 1 order by 1 nulls first",
    "select id, s.c from t where s.a > 3 order by id",
    "select id, s.c is null, s.c.d is null, s.a is null, s.c.e from t order by id",
    "select id, s.l, s.m['x'], len(s.l), s.l[1] from t order by id",
    "select count(*) from t a join t b on a.s.c = b.s.c",
    "select count(*), count(a.id) from t a join t b on a.s.b = b.s.b and a.id < b.id",
    "select min(s.a), max(s.c.d), min(s.b), max(s.c.e) from t",
    "select id, s, s.a from t order by id",
    "select s.c.e, count(*) from t where s.c.d between 2 and 5 group by 1 order by 1 nulls first",
    "select id from t where s.a = 1 order by id",
    "select x from (select s.a as x from t union all select s.c.d from t) order by x nulls first",
    "select id, list_transform(s.l, lambda x: x + s.a) from t order by id",
    "select id, s.a, w from t, (select max(s.c.d) as w from t) order by id",
    "select distinct s.c from t order by 1 nulls first",
    "select id, s.c.d from t order by s.c.d nulls first, id limit 17",
    "select id, s.b, v from t, unnest(s.l) as u(v) order by id, v nulls first",
    "select id, p.s.a, (p.s).c.e from t as p where p.s.b like 'b%' order by id",
    "select s.c.e, s.c from t group by all order by 1 nulls first, 2 nulls first",
    "select events.s.a, count(*) from t as events group by 1 order by 1 nulls first",
    "select id, coalesce(s.c, {'d': -1, 'e': 'none'}).e from t order by id",
    # a join on a field: a runtime filter aimed at the scan's field column
    "select count(*), sum(a.id) from t a join (select id from t where id % 50 = 0) b on (a.s).c.d = b.id",
    "select a.id, b.id from t a join t b on a.s.b = b.s.b where b.id = 7 order by 1, 2",
    # keys on a STRUCT of scalar fields: its fields' columns (NULL fields equal, a NULL struct no match)
    "select count(*) from t a join t b on {'x': a.s.a::int, 'y': a.s.b} = {'x': b.s.a, 'y': b.s.b}",
    "select s.c, count(*) from t group by 1 order by 1 nulls first",
    "select count(distinct s.c), count(distinct {'a': s.a, 'b': s.c}) from t",
    "select count(*) from t a join t b on a.s = b.s",
    "select count(*) from t a join t b on {'f': a.s.a / 4} = {'f': b.s.a / 4}",
    "select count(*), count(b.id) from t a left join t b on a.s.c = b.s.c and b.id < 50",
    "select id from t where s.c in (select s.c from t where id < 100) order by id",
    "select id from t where s.c not in (select s.c from t where id < 100 and s.c is not null) order by id",
    "select x, count(*) from (select {'k': s.c, 'b': s.a > 4} as x from t) group by x order by x nulls first",
]


def _table(rows: int) -> pa.Table:
    """A struct with NULLs at every level: NULL structs, NULL inner structs, NULL fields, a list
    and a map inside it; its string fields' dictionaries differ between row groups."""
    s = []
    for i in range(rows):
        if i % 11 == 0:
            s.append(None)
            continue
        c = None if i % 7 == 0 else {"d": None if i % 5 == 0 else i % 9, "e": None if i % 13 == 0 else f"e{i // 150}{i % 4}"}
        s.append({"a": None if i % 6 == 0 else i % 10, "b": None if i % 17 == 0 else f"b{(i * 7) % 23}", "c": c,
                  "l": None if i % 8 == 0 else list(range(i % 4)),
                  "m": None if i % 9 == 0 else [("x", i), ("y", None)] if i % 2 else []})
    typ = pa.struct([("a", pa.int64()), ("b", pa.string()),
                     ("c", pa.struct([("d", pa.int64()), ("e", pa.string())])),
                     ("l", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.int64()))])
    return pa.table({"id": pa.array(range(rows), pa.int64()), "s": pa.array(s, typ)})


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("struct_fields")
    pq.write_table(_table(ROWS), d / "t.parquet", row_group_size=150)
    return d


@pytest.fixture(scope="module", params=list(SETTINGS))
def con(request, events_dir):
    return sluice.connect(str(events_dir), device="cpu", **SETTINGS[request.param])


@pytest.mark.parametrize("sql", QUERIES, ids=[f"q{i:02d}" for i in range(len(QUERIES))])
def test_answers_as_duckdb(sql, con, duck):
    ours = con.sql(sql).to_arrow()
    theirs = duckdb_answer(duck, sql)
    compare(ours, theirs, list(range(ours.num_columns)) if "order by" in sql else None)


def _scan_stats(con, sql):
    rel = con.sql(sql)
    rel.to_arrow()
    _, ctx = rel.last_run
    return [r.stats for r in ctx.readers()]


def test_reads_only_the_fields_used(tmp_path):
    """The bytes read are the field's column chunks: not the struct's wide string field's."""
    import random
    rnd = random.Random(5)
    n = 20000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "s": pa.array([{"b": "%032x" % rnd.getrandbits(128), "c": {"d": i % 7}} for i in range(n)],
                                pa.struct([("b", pa.string()), ("c", pa.struct([("d", pa.int64())]))]))})
    pq.write_table(t, tmp_path / "t.parquet")
    sql = "select s.c.d, count(*) from t group by 1 order by 1"
    on = sluice.connect(str(tmp_path), device="cpu")
    off = sluice.connect(str(tmp_path), device="cpu", disabled_rules="struct_fields")
    (a,), (b,) = _scan_stats(on, sql), _scan_stats(off, sql)
    assert 0 < a.bytes_read * 20 < b.bytes_read, (a.bytes_read, b.bytes_read)
    assert "Scan t [s.c.d]" in on.sql(sql).explain()
    compare(on.sql(sql).to_arrow(), duckdb_answer(duckdb_connect(tmp_path), sql), [0, 1])


def test_a_struct_used_whole_is_read_whole(events_dir):
    """``s`` named bare anywhere -- the result, a lambda's body -- keeps the whole column."""
    on = sluice.connect(str(events_dir), device="cpu")
    off = sluice.connect(str(events_dir), device="cpu", disabled_rules="struct_fields")
    for sql in ("select s, s.a from t", "select count(*) from t where s is null or s.a = 1"):
        (a,), (b,) = _scan_stats(on, sql), _scan_stats(off, sql)
        assert a.bytes_read == b.bytes_read, sql


def test_device_decoder_hands_the_field_over(events_dir):
    con = sluice.connect(str(events_dir), device="cpu", decoder="device")
    (st,) = _scan_stats(con, "select id, s.a, s.c.e from t")
    assert set(st.fallbacks) == {"s.a", "s.c.e"} and all("nested" in v for v in st.fallbacks.values())
    strict = sluice.connect(str(events_dir), device="cpu", decoder="device", strict_device=True)
    with pytest.raises(sluice.errors.UnsupportedError, match="nested column"):
        strict.sql("select s.a from t").to_arrow()


def test_dictionary_falling_back_to_plain_inside_a_row_group(tmp_path):
    """A string field whose pages fall back to plain within a row group: its values as read
    plainly (NULL where the struct is), the same answers."""
    n = 4000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "s": pa.array([None if i % 9 == 0 else {"b": None if i % 5 == 0 else f"v{i % 3000:05d}"}
                                 for i in range(n)], pa.struct([("b", pa.string())]))})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=n, dictionary_pagesize_limit=512)
    md = pq.ParquetFile(tmp_path / "t.parquet").metadata
    got = _dictionary_fields(str(tmp_path / "t.parquet"), md, [0], ["s.b"], True)
    plain = pq.read_table(tmp_path / "t.parquet").column("s").combine_chunks().field("b")
    assert got["s.b"].cast(pa.string()).to_pylist() == [None if i % 9 == 0 else v for i, v in enumerate(plain.to_pylist())]
    duck = duckdb_connect(tmp_path)
    sql = "select s.b, count(*) from t group by 1 order by 1 nulls first"
    for decoder in ("arrow", "device"):
        ours = sluice.connect(str(tmp_path), device="cpu", decoder=decoder).sql(sql).to_arrow()
        compare(ours, duckdb_answer(duck, sql), [0, 1])


def test_two_ranks(events_dir, duck):
    """Each rank reads its share of the fields; the exchanges carry plain columns."""
    con = sluice.connect(str(events_dir), device="cpu", ranks=2, broadcast_bytes=0)
    for sql in (QUERIES[1], QUERIES[5], QUERIES[14], QUERIES[16]):
        ours = con.sql(sql).to_arrow()
        compare(ours, duckdb_answer(duck, sql), list(range(ours.num_columns)) if "order by" in sql else None)


def test_never_pruned_on_a_field(events_dir, duck):
    """Row groups are pruned on top-level columns' statistics only: a filter on a field reads
    every row group (a NULL struct's field is NULL, which a leaf's statistics do not say)."""
    con = sluice.connect(str(events_dir), device="cpu")
    for sql in ("select id from t where s.c.d > 100", "select id from t where s.a = 3 and s.b = 'zzz'"):
        (st,) = _scan_stats(con, sql)
        assert st.pruned == 0 and "s.a" not in str(st.fallbacks), sql
        compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql), None)
    (st,) = _scan_stats(con, "select id from t where id > 10000")  # (a top-level column: pruned)
    assert st.pruned == st.row_groups > 0


def test_field_names_case_blanks_and_a_column_named_like_the_path(tmp_path):
    """Fields are found case-insensitively and read by their own names (blanks too); a top-level
    column named like a path (``"s.Low"``) keeps the struct whole (the path would be ambiguous)."""
    typ = pa.struct([("Big Field", pa.int64()), ("Low", pa.string())])
    s = pa.array([{"Big Field": 1, "Low": "x"}, None, {"Big Field": None, "Low": "y"}, {"Big Field": 4, "Low": None}], typ)
    pq.write_table(pa.table({"id": [1, 2, 3, 4], "s": s}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [1, 2, 3, 4], "s": s, "s.Low": ["a", "b", "c", "d"]}), tmp_path / "b.parquet")
    duck = duckdb_connect(tmp_path)
    con = sluice.connect(str(tmp_path), device="cpu")
    for sql in ('select id, s."Big Field", s.low, s.LOW from a order by id', 'select id, "s.Low", s.Low from b order by id',
                'select s.low, count(*) from b group by 1 order by 1 nulls first'):
        compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql), [0])
    assert 'Scan a [id, s.Big Field, s.Low]' in con.sql('select id, s."Big Field", s.low from a').explain()
    assert 'Scan b [id, s]' in con.sql("select id, s.low from b").explain()
