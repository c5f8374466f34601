"""The printers show DuckDB's 'infinity' / '-infinity' dates and timestamps and BIT values as
DuckDB's text of them (not Python's date range error, not the BIT's binary form)."""

import duckdb

import sluice
from sluice.render import format_rows, format_table

SQL = "select 'infinity'::date d, '-infinity'::timestamp t, '0101'::bit b, date '2020-01-02' f"


def test_special_values_print_as_duckdb_writes_them(tmp_path):
    want = duckdb.sql(f"select d::varchar, t::varchar, b::varchar, f::varchar from ({SQL})").fetchall()[0]
    table = sluice.connect(str(tmp_path), device="cpu").sql(SQL).to_arrow()
    csv = format_rows(table, "csv").splitlines()[1]
    assert csv == ",".join(want)
    json_line = format_rows(table, "json")
    assert all(f'"{v}"' in json_line for v in want)
    text = format_table(table)
    assert all(v in text for v in want)
