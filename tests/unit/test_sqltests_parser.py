"""The sqllogictest parser of bench/duckdb_sqltests.py on an inline test text: records, sort
modes, skipif / onlyif, mode skip, loops unrolled, halt, and files skipped for an extension."""

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "bench" / "duckdb_sqltests.py"
_spec = importlib.util.spec_from_file_location("duckdb_sqltests", _PATH)
harness = importlib.util.module_from_spec(_spec)
sys.modules["duckdb_sqltests"] = harness
_spec.loader.exec_module(harness)

TEXT = """# name: test/sql/x.test
# group: [x]

statement ok
CREATE TABLE t(i INTEGER);

statement error
SELECT * FROM nowhere
----
Catalog Error

query I rowsort
SELECT i
FROM t
----
1
2

skipif duckdb
query I
SELECT 'skipped'
----
x

onlyif duckdb
query II nosort label
SELECT 1, 2 ORDER BY 1
----
1	2

mode skip

query I
SELECT 'in skip mode'
----

mode unskip

loop k 0 2

query I valuesort
SELECT ${k}
----
${k}

endloop

foreach ty tinyint bigint

query I
SELECT 1::${ty}
----
1

endloop

halt

query I
SELECT 'after halt'
----
"""


def test_records_of_an_inline_file():
    tf = harness.parse_test(TEXT)
    assert tf.skip is None
    kinds = [(r.kind, r.sql, r.sort, r.expect_error) for r in tf.records]
    assert kinds == [
        ("statement", "CREATE TABLE t(i INTEGER);", "nosort", False),
        ("statement", "SELECT * FROM nowhere", "nosort", True),
        ("query", "SELECT i\nFROM t", "rowsort", False),
        ("query", "SELECT 1, 2 ORDER BY 1", "nosort", False),
        ("query", "SELECT 0", "valuesort", False),
        ("query", "SELECT 1", "valuesort", False),
        ("query", "SELECT 1::tinyint", "nosort", False),
        ("query", "SELECT 1::bigint", "nosort", False),
    ]
    assert tf.records[2].line == 12 and tf.records[2].types == "I"
    assert tf.records[3].types == "II"


def test_files_needing_an_extension_or_a_huge_loop_are_skipped_whole():
    assert harness.parse_test("require icu\n\nquery I\nSELECT 1\n----\n1\n").skip == "require icu"
    assert harness.parse_test("require skip_reload\n\nquery I\nSELECT 1\n----\n1\n").skip is None
    tf = harness.parse_test("loop i 0 100000\n\nquery I\nSELECT ${i}\n----\n\nendloop\n")
    assert tf.skip is not None and "100000" in tf.skip


def test_ordered_looks_at_the_outermost_select():
    assert harness._ordered("select a from (select a from t order by a) x order by 1")
    assert not harness._ordered("select a from (select a from t order by a) x")
    assert not harness._ordered("select 'order by' from t")
