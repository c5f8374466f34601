"""Remembered magnitude bounds (kernels/bounds.py): a bound is a true upper bound, a tensor
written in place is measured again, a broadcast constant costs no pass, and a result's derived
bound keeps overflow checks safe (a product that wraps still raises)."""

import pytest
import torch

import sluice
from sluice.kernels.bounds import max_abs, remember


def test_bounds_are_measured_remembered_and_renewed():
    t = torch.tensor([3, -7, 5])
    assert max_abs(t) == 7
    remember(t, 100)  # a looser bound stands until the tensor changes
    assert max_abs(t) == 100
    t[0] = -50
    assert max_abs(t) == 50
    assert max_abs(torch.tensor(-9).expand(1000)) == 9


def test_derived_bounds_never_hide_an_overflow(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    big = 3_000_000_000
    pq.write_table(pa.table({"a": pa.array([big, 2, -big], pa.int64()), "b": pa.array([big, 3, 1], pa.int64())}),
                   tmp_path / "t.parquet")
    con = sluice.connect(tmp_path, device="cpu")
    assert con.sql("select sum(a * 2) s, sum(b + 1) t from t").to_arrow().to_pylist() == [{"s": 4, "t": big + 7}]
    with pytest.raises(sluice.SluiceError, match="overflow|out of range"):
        con.sql("select sum((a * b) * b) from t").to_arrow()
