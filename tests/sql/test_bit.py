"""DuckDB's BIT type against DuckDB: casts from and to text, integers, BOOLEAN and floats, the
bit functions, the bitwise operators, ordering, BITSTRING_AGG (with its range and its
out-of-range error), and results in DuckDB's own binary form of a BIT (as DuckDB hands one to
Arrow). A BIT column reaches Parquet as the VARCHAR of its bits (DuckDB's export, checked
below), so the table holds text and the queries cast it."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.testing.oracle import compare


@pytest.fixture(scope="module")
def bit_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("bits")
    pq.write_table(pa.table({
        "i": pa.array(range(9), pa.int32()),
        "s": ["0101", "1", "00001111", "0", "00000000", "011", None, "1111111111", "10000000"],
        "t": ["0011", "0", "11110000", "1", "11111111", "110", "01", None, "00000001"],
        "x": pa.array([3, -2, 7, None, 0, 3, 12, -7, 5], pa.int16()),
        "g": [1, 2, 1, 2, 1, 2, 1, 2, 1],
    }), root / "b.parquet", row_group_size=4)
    return root


@pytest.fixture(scope="module")
def bit_duck(bit_dir):
    con = duckdb.connect()
    con.execute(f"create view b as select * from read_parquet('{bit_dir / 'b.parquet'}')")
    return con


QUERIES = {
    "values": "select i, s::bit, s::bit::varchar from b",
    "literals": "select '0101'::bit, ''::bit::varchar, bit_length(''::bit), try_cast('012' as bit), "
                "'0101'::bit = '0101', '0101'::bit || 'x'",
    "from_integers": "select i, x::bit, x::tinyint::bit, x::bigint::bit, (x > 0)::bit, i::bit from b",
    "from_floats": "select 1.5::double::bit, 2.1e-44::float::bit, 7.4e-323::bit",
    "to_integers": "select i, s::bit::smallint, s::bit::integer, s::bit::bigint from b",
    "to_tinyint": "select i, s::bit::tinyint, s::bit::bool from b where length(s) <= 8",
    "to_floats": "select '00001111'::bit::float, '00001111'::bit::double, "
                 "'100001111000011110000111100001111'::bit::bigint",
    "functions": "select i, bit_count(s::bit), bit_length(s::bit), octet_length(s::bit), length(s::bit), "
                 "get_bit(s::bit, 0), set_bit(s::bit, 0, 1), bit_position('11'::bit, s::bit) from b",
    "bitstring": "select i, bitstring(s, 10), bitstring(s::bit, 12) from b",
    "bit_length_of_text": "select i, bit_length(s), bit_length(s::bit), bit_length('€'), bit_length(NULL) from b",
    "bitwise": "select i, s::bit & t::bit, s::bit | t::bit, xor(s::bit, t::bit), ~s::bit from b "
               "where length(s) = length(t)",
    "shifts": "select i, s::bit << 1, s::bit >> 2, s::bit << 9 from b",
    "order": "select i, s::bit from b order by s::bit, i",
    "compare": "select i, s::bit < t::bit, s::bit >= '011'::bit, s::bit = t::bit from b",
    "minmax": "select g, min(s::bit), max(s::bit), count(distinct s::bit) from b group by g",
    "bitstring_agg": "select g, bitstring_agg(x, -8, 12), bit_count(bitstring_agg(x, -10, 20)) from b group by g",
    "bitstring_agg_all": "select bitstring_agg(x, -7, 12), bitstring_agg(3), bitstring_agg(2, 0, 5) from b",
    "bitstring_agg_none": "select bitstring_agg(x, 0, 20) from b where i > 100",
    "bitstring_agg_statistics": "select g, bitstring_agg(x) from b group by g",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_bit(name, bit_dir, bit_duck, connect, edge_settings):
    sql = QUERIES[name]
    ours = connect(bit_dir, **edge_settings).sql(sql).to_arrow()
    compare(ours, bit_duck.sql(sql).to_arrow_table(), [0, 1] if "order by" in sql else None)


ERRORS = [
    ("select '012'::bit", "Invalid character"),
    ("select bitstring('1', 9)::tinyint", "doesn't fit"),
    ("select s::bit::tinyint from b", "doesn't fit"),
    ("select get_bit('0110'::bit, 4)", "out of valid range"),
    ("select set_bit('0110'::bit, 0, 2)", "must be 1 or 0"),
    ("select bitstring('0101', 2)", "Length must be"),
    ("select '0101'::bit & '011'::bit", "different sizes"),
    ("select bitstring_agg(x, -5, 5) from b", "outside of provided min and max range"),
]


@pytest.mark.parametrize("sql,match", ERRORS)
def test_bit_errors(sql, match, bit_dir, bit_duck, connect):
    with pytest.raises(duckdb.Error, match=match):
        bit_duck.sql(sql).fetchall()
    with pytest.raises(sluice.errors.ExecutionError, match=match):
        connect(bit_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", ["select bitstring_agg(x) from b where i > 2", "select bitstring_agg(x + 1) from b"])
def test_bitstring_agg_needs_its_range(sql, bit_dir, connect):
    """Without min and max DuckDB takes the range from statistics it narrows under a filter by
    rules of its own: refused there (a column read whole takes the file's: QUERIES)."""
    with pytest.raises(sluice.errors.UnsupportedError, match="min and max"):
        connect(bit_dir).sql(sql).to_arrow()


def test_a_bit_column_in_parquet_is_its_text(tmp_path, connect):
    """DuckDB's export writes a BIT column as UTF8 text of its bits; sluice reads that text, as
    DuckDB reading the file back does (a VARCHAR), and a cast makes it a BIT again."""
    duckdb.sql(f"copy (select '0101'::bit b, 15::bit c) to '{tmp_path / 'x.parquet'}'")
    sql = "select b, c, b::bit, bit_count(c::bit) from x"
    ours = connect(tmp_path).sql(sql).to_arrow()
    con = duckdb.connect()
    con.execute(f"create view x as select * from read_parquet('{tmp_path / 'x.parquet'}')")
    compare(ours, con.sql(sql).to_arrow_table(), check_types=True)
