"""Forms of DuckDB's SQL its own tests use that sluice refused: dollar-quoted strings, UNION
[ALL] BY NAME, row values in comparisons and IN, subqueries in an outer join's ON, OVERLAY,
PRINTF's flags / widths / precisions, BAR, the path functions (``parse_filename`` /
``parse_dirname`` / ``parse_dirpath``). Against DuckDB on generated data,
with tiny chunks too; the forms still refused are refused in one line."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("duckdb_forms")
    r = random.Random(7)
    n = 60
    t = pa.table({"x": pa.array([None if j % 9 == 4 else r.randint(-2, 4) for j in range(n)], pa.int32()),
                  "s": pa.array([None if j % 7 == 3 else r.choice(["a", "", "bc", "Zz", "héllo"]) for j in range(n)]),
                  "big": pa.array([r.choice([2 ** 62, -5, 3, None, 7]) for _ in range(n)], pa.int64()),
                  "d": pa.array([None if j % 11 == 2 else r.choice([0.5, -1.0, 2.25, float("nan")]) for j in range(n)])})
    pq.write_table(t, root / "t.parquet", row_group_size=16)
    paths = ["/a/b/c.txt", "a/b/c", "c.tar.gz", ".bashrc", "/", "", "a\\b\\c.d", "/a/b/", "a//b", "x.", "..",
             "/x", "//", "///", "//x", "C:\\x\\y.z", "a/b\\c.e", "é/ü.ö", None]
    paths += ["".join(r.choice("ab./\\") for _ in range(r.randint(0, 7))) for _ in range(80)]
    pq.write_table(pa.table({"p": paths}), root / "p.parquet", row_group_size=32)
    return root


@pytest.fixture(scope="module")
def duck(data):
    return duckdb_tables(data)


FORMS = [
    # dollar-quoted strings
    "select $$hello$$, $$it's$$ || 'x', $tag$a$$b$tag$, length($$abc$$), $$$$",
    "select s from t where s = $$bc$$", "select $$1$$::integer + 1, $$2020-01-02$$::date",
    # UNION [ALL] BY NAME
    "select x from t union by name select x from t",
    "select x, s from t union all by name select s, x from t",
    "select x from t union all by name select s from t",
    "select x, s from t union all by name select s as X, big from t",
    "select x from t union all by name select s from t union all by name select big, x from t",
    "select x as a from t union by name select NULL as a from t",
    "select x, 1 as k from t union all by name select 2.5 as k, big as x from t",
    "select * from (select x from t union all by name select s from t) where x > 0",
    # row values
    "select (x, s) = (1, ''), (x, s) <> (1, ''), (x, s) <= (1, 'a'), (x, s) >= (0, 'a') from t",
    "select (x, s) > (1, NULL), (s, x) < ('a', 5), (x, x) < (1, 2), (x, d) = (1, 0.5), (d, x) < (0.5, 2) from t",
    "select x from t where (x, s) in ((1, ''), (2, 'bc'))",
    "select x from t where (x, s) not in ((1, ''), (2, 'bc'), (NULL, NULL))",
    "select count(*) from t where (x, big) in ((0, 4611686018427387904), (NULL, NULL), (2, 3))",
    "select a.x, b.x as y from t a join t b on (a.x, a.s) = (b.x, b.s) where a.x > 2",
    "select count(*) from t a, t b where (a.x, a.big) < (b.x, b.big)",
    "select (x, s) in (select x, s from t) from t",
    "select (1, NULL) = (1, 2), (1, NULL) <> (2, 2), (NULL, 1) < (2, 0), (1, NULL) < (2, 0), (1, NULL) = (1, NULL)",
    "select (2, NULL) > (1, 5), (1, 2) > (1, NULL), (1, 2.5) = (1, 2), (1, 2, 3) < (1, 2, 4), NULL = (1, 2)",
    # subqueries in an outer join's ON: joined to the side they read
    "select a.x, b.x as y from t a left join t b on b.x = (select max(x) from t)",
    "select a.x, b.x as y from t a left join t b on a.x = b.x and b.s in (select s from t where x > 0)",
    "select a.x, b.x as y from t a left join t b on a.x = b.x and exists (select 1 from t c where c.x = b.x + 1)",
    "select a.x, b.x as y from t a left join t b on a.x = b.x and exists (select 1 from t c where c.x = a.x + b.x)",
    "select a.x, b.x as y from t a left join t b on a.x = b.x and b.x not in (select x from t where x > 1)",
    "select a.x, b.x as y from t a right join t b on a.x = b.x and a.s in (select s from t where x > 0)",
    "select a.x, b.x as y from t a left join t b on a.x = b.x and a.s in (select s from t where x > 0)",
    "select a.x, b.x as y from t a left join t b on a.x = (select min(x) from t c where c.x > b.x)",
    "select a.x, b.x as y from t a full join t b on a.x = b.x and b.s in (select s from t where x > 0) "
    "and a.s not in (select s from t where x = 2)",
    "select a.x, b.x as y from t a left join t b on a.x = b.x and (b.s in (select s from t where x > 0) or a.x = 0)",
    "select a.x, b.x as y, c.x as z from t a left join t b on a.x = b.x and b.s in (select s from t where x > 0) "
    "left join t c on c.x = b.x and c.x = (select max(x) from t)",
    "select a.x, b.x as y from t a left join (select * from t) b on a.x = b.x and a.x > (select avg(x) from t)",
    "select a.x, count(b.x) from t a left join t b on a.x < b.x and b.s in (select s from t) group by a.x",
    # OVERLAY
    "select overlay('hello' placing 'XX' from 2 for 3), overlay(s placing 'XX' from 2) from t",
    "select overlay(s placing 'XX' from 1), overlay(s placing '' from 0 for 2), overlay(s placing 'é' from -5 for 2) from t",
    "select overlay(s placing 'Q' from 10 for 1), overlay(s placing s from 2 for 1), overlay(s placing 'XX' from 3 for 0) from t",
    "select overlay(NULL placing 'a' from 1), overlay('a' placing NULL from 1), overlay('abc' placing 'a' from NULL)",
    # PRINTF with flags, width, precision, %x / %o / %f / %e / %g
    "select printf('%x|%X|%o', -1, 255, 8), printf('%#X|%#x', 0, 255), printf('%.2f', 2.675), printf('%.0f', 2.5)",
    "select printf('%x', x), printf('%5x', big), printf('%#x', x), printf('%-6o|', x), printf('%+05d', x) from t",
    "select printf('%5.1f|%-8.3f|%+d|% d|%05d|%-5d|%5s|%-5s|%.2s', 3.14159, 2.5, 5, 5, -42, 7, 'ab', 'ab', 'abcdef')",
    "select printf('%.3f', 'nan'::double), printf('%f', 'inf'::double), printf('%08.3f', -3.14159), printf('%10.4f', 1e20)",
    "select printf('%5d|%-5s|%.2f|%x|%%|%05.1f', x, s, 1.23456, 255, 3.14159) from t",
    # DuckDB's formatter: with the 0 flag an integer's precision is ignored, zeros pad even a
    # left-justified number (the fuzzer found '%0.2i' of 2 answered '02')
    "select printf('%0.2i|%0.3d|%08.3d|%-08.3d|%0-5d|%-05d', 2, 7, 5, 5, -5, 5), printf('%-08.2f|%0-10.2e', 1.5, 12345.678)",
    "select printf('%0.2i|%-08.3d|%+0.4d|%-6.2d|', x, x, x, x) from t",
    "select printf('%5d', NULL), printf('%-+6d|', 12), printf('%5s', true), printf('%3d', false)",
    "select printf('%8.2f|%-10s|%+05d|%e|%g', d, s, x, d, d), printf('%.2f', x * 0.5), printf('%5s|', s) from t",
    "select printf('%e|%E|%g|%G|%F|%.3e|%10.2g', 12345.678, 0.5, 0.0001, 1e20, 'inf'::double, -2.5, 1e-5)",
    # BAR
    "select bar(x, 0, 5, 10), bar(d, -3, 2, 7.5), bar(big, 0, 10), bar(x, 2, 0, 10), bar(d, 0, 1, 4) from t",
    "select bar(1, 0, 5, 10), bar(1.3, 0, 5, 10), bar(1, 0, 5, 10.5), bar(1, 0, 5, 10.9), bar(6, 0, 5, 10), "
    "bar(-1, 0, 5, 10), bar(5, 5, 5, 10), bar('nan'::double, 0, 5, 10), bar(1, 0, 5), bar(1, 0, 5, 1)",
    "select bar(0.3125, 0, 5, 10), bar(NULL, 0, 5, 10), bar(1, 0, 'inf'::double, 10), bar(6, 0, 5, 10.9), bar(1, 0, 5, 2.99)",
    "select bar(1, 'nan'::double, 10), bar(1, 0, 'nan'::double), bar(x, 'nan'::double, 'nan'::double, 3), "
    "bar(1, 'inf'::double, 10), bar(x, 'inf'::double, 'inf'::double) from t",
    # path functions
    "select p, parse_filename(p), parse_filename(p, true), parse_filename(p, false, 'forward_slash') from p",
    "select p, parse_filename(p, true, 'backslash'), parse_filename(p, 'system'), parse_dirname(p) from p",
    "select p, parse_dirname(p, 'backslash'), parse_dirpath(p), parse_dirpath(p, 'forward_slash'), parse_dirpath(p, 'both_slash') from p",
    # a NULL option is its default, not a NULL result (DuckDB's tests: parse_path.test)
    "select p, parse_filename(p, NULL), parse_filename(p, NULL, NULL), parse_filename(p, true, NULL), "
    "parse_filename(p, NULL, 'backslash'), parse_dirname(p, NULL), parse_dirpath(p, NULL::varchar) from p",
    # HAVING without GROUP BY or aggregates: one group of every row (SQL's rule, DuckDB's)
    "select 1 as one from t having 1 < 2", "select 1 from t having false", "select 42 having 42 > 20",
    "select 42 having 42 > 80", "select 'k' from t where x > 100 having true", "select 'k' from t having min(x) > -5",
    # '%.d' is DuckDB's thousands separator (refused below); '%.3d' and '%.f' are C's precision
    "select printf('%.3d|%.f|%.s|%.0f', x, d, s, d) from t where d is not null and s is not null and x is not null",
]


@pytest.mark.parametrize("sql", FORMS)
def test_answers_as_duckdb(sql, data, duck, connect):
    theirs = duck.sql(sql).to_arrow_table()
    for settings in ({}, {"chunk_rows": 5}):
        compare(connect(data, **settings).sql(sql).to_arrow(), theirs)


@pytest.mark.parametrize("sql, error", [
    ("select (1, 2) = (1, 2, 3)", PlanError),
    ("select printf('%.2f', 1::integer)", PlanError), ("select bar(1, 0, 5, 0.5)", PlanError),
    ("select bar(1, '-inf'::double, 5, 10)", ExecutionError), ("select bar(x, 0, x, 10) from t", UnsupportedError), ("select printf('%c', 65)", UnsupportedError),
    ("select printf('%5s', '\u4e2d')", UnsupportedError),
    ("select x from t having true", PlanError),
    ("select printf('%.d', 123456789)", UnsupportedError), ("select printf('%5.i', x) from t", UnsupportedError),
    ("select x from t union by name select x, x from t", PlanError),
    ("select x from t intersect by name select x from t", UnsupportedError),
    ("select overlay('abc' placing 'x' from 2 for -1)", UnsupportedError),
])
def test_refused_in_one_line(sql, error, data, connect):
    with pytest.raises(error):
        connect(data).sql(sql).to_arrow()
