"""Numbers at their edges, against DuckDB: ROUND of doubles (the exact binary value decides a
half: ``round(0.075, 2)`` is 0.07), digits beyond a double's range, REAL inputs."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def rnd_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("round")
    r = random.Random(5)
    vals = []
    for _ in range(3000):
        k = r.random()
        if k < 0.4:  # decimals as written, many of them halves at some digit
            vals.append(round(r.uniform(-1000, 1000), r.randint(0, 6)))
        elif k < 0.7:
            vals.append(r.randint(-10 ** 6, 10 ** 6) / 10 ** r.randint(0, 5) + 0.5 / 10 ** r.randint(0, 5))
        else:
            vals.append(r.uniform(-1e6, 1e6) * 10 ** r.randint(-10, 10))
    vals += [0.075, 2.675, 1.005, -0.285, 0.5, -2.5, 42.5, 1e308, float("inf"), float("nan"), -0.0, None,
             -0.4, -0.0004, -4.0, -49.0]
    pq.write_table(pa.table({"i": pa.array(range(len(vals))), "x": pa.array(vals, pa.float64()),
                             "y": pa.array(vals, pa.float32())}), root / "t.parquet", row_group_size=1000)
    return root


@pytest.fixture(scope="module")
def rnd_duck(rnd_dir):
    return duckdb_tables(rnd_dir)


@pytest.mark.parametrize("digits", [-1000, -3, -1, 0, 1, 2, 3, 5, 10, 20, 25, 400])
def test_round_doubles_as_duckdb(digits, rnd_dir, rnd_duck, connect):
    sql = f"select i, round(x, {digits}), round(y, {digits}) from t"
    compare(connect(rnd_dir).sql(sql).to_arrow(), rnd_duck.sql(sql).to_arrow_table(), check_types=True)


@pytest.mark.parametrize("digits", [-2, -1, 0, 1, 3])
def test_round_keeps_the_sign_of_zero(digits, rnd_dir, rnd_duck, connect):
    # round(-0.4) is -0.0 in DuckDB: dividing by it gives -inf (the fuzzer found x / round(f)
    # with the infinity's sign flipped). compare() takes -0.0 == 0.0, so divide by the result.
    sql = f"select i, 1.0 / round(x, {digits}) as q, 1.0 / round(y, {digits}) as r from t where round(x, {digits}) = 0"
    ours = connect(rnd_dir).sql(sql).to_arrow()
    assert ours.num_rows >= 2  # -0.0 and a negative that rounds to zero, at least
    compare(ours, rnd_duck.sql(sql).to_arrow_table())


def test_decimal_product_with_a_zero_padded_literal(tmp_path, connect):
    # TPC-H q11 at SF 10: sum(...) * 0.0001000000 has 12 decimals and passes 64 bits, which
    # sluice's decimals are; the literal's trailing zeros are dropped first (same value, 6
    # decimals) and the query answers as DuckDB does.
    from decimal import Decimal
    from sluice.testing.oracle import duckdb_connect
    vals = [Decimal("98765432109876.54")] * 40 + [Decimal("1.25")]
    pq.write_table(pa.table({"k": pa.array(list(range(41)), pa.int64()),
                             "v": pa.array(vals, pa.decimal128(18, 2))}), tmp_path / "d.parquet")
    sql = ("select k, sum(v) as s from d group by k having sum(v) > "
           "(select sum(v) * 0.0001000000 from d) order by k")
    compare(connect(tmp_path).sql(sql).to_arrow(), duckdb_connect(tmp_path).sql(sql).to_arrow_table())
    sql = "select sum(v) * 0.0001000000 as p, sum(v) * 0.0001 as q from d"
    ours, theirs = connect(tmp_path).sql(sql).to_arrow(), duckdb_connect(tmp_path).sql(sql).to_arrow_table()
    assert ours.to_pylist() == theirs.to_pylist()
