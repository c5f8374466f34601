"""Star Schema Benchmark tables derived from TPC-H data (the usual derivation).

- ``lineorder``: lineitem joined with orders (and partsupp for the supply cost), one row per
  lineitem. Money columns are int32 cents; discount and tax int32 percent; dates yyyymmdd int32:
  lo_orderkey, lo_linenumber, lo_custkey, lo_partkey, lo_suppkey, lo_orderdate (o_orderdate),
  lo_orderpriority, lo_shippriority, lo_quantity, lo_extendedprice, lo_ordtotalprice,
  lo_discount, lo_revenue = extendedprice * (100 - discount) / 100, lo_supplycost, lo_tax,
  lo_commitdate (l_commitdate), lo_shipmode.
- ``customer`` / ``supplier``: nation and region names replace the keys; city = the first 9
  characters of the nation name padded to 9, plus (key mod 10), e.g. 'UNITED KI1'.
- ``part``: mfgr 'MFGR#M' (from 'Manufacturer#M'), category 'MFGR#MN' (from 'Brand#MN'),
  brand1 = category + (partkey mod 40 + 1), color = first word of p_name.
- ``date``: one row per day 1992-01-01..1998-12-31 with SSB's calendar columns.

Lineorder is streamed row group by row group: orders and partsupp are looked up with
``searchsorted`` over sorted keys, so memory is bounded by orders + partsupp, not lineitem.
"""

from __future__ import annotations

import calendar
import datetime as dt
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sluice.datagen.checksums import CHECKSUM_WRITER
from sluice.datagen.tpch import generate_tpch

MONTHS = [calendar.month_name[i] for i in range(1, 13)]
DAYS = [calendar.day_name[i] for i in range(7)]
SSB_TABLES = ("lineorder", "customer", "supplier", "part", "date")


def _yyyymmdd(dates: pa.Array) -> np.ndarray:
    days = dates.cast(pa.int32()).to_numpy(zero_copy_only=False).astype("datetime64[D]")
    y = days.astype("datetime64[Y]").astype(int) + 1970
    m = days.astype("datetime64[M]").astype(int) % 12 + 1
    d = (days - days.astype("datetime64[M]")).astype(int) + 1
    return (y * 10000 + m * 100 + d).astype(np.int32)


def _cents(a: pa.Array) -> np.ndarray:
    return np.round(a.cast(pa.float64()).to_numpy(zero_copy_only=False) * 100).astype(np.int64)


def _city(names: pa.Array, keys: pa.Array) -> pa.Array:
    pre = pc.utf8_rpad(pc.utf8_slice_codeunits(names, 0, 9), 9, " ")
    digit = pc.cast(pc.subtract(keys, pc.multiply(pc.divide(keys, 10), 10)), pa.string())
    return pc.binary_join_element_wise(pre, digit, "")


def _nation_lookup(tpch: Path):
    nation = pq.read_table(tpch / "nation.parquet").to_pydict()
    region = pq.read_table(tpch / "region.parquet").to_pydict()
    rname = dict(zip(region["r_regionkey"], region["r_name"]))
    nname = dict(zip(nation["n_nationkey"], nation["n_name"]))
    nreg = {k: rname[r] for k, r in zip(nation["n_nationkey"], nation["n_regionkey"])}
    return nname, nreg


def _dim_with_geo(tbl: pa.Table, key: str, nkey: str, nname, nreg) -> tuple[pa.Array, pa.Array, pa.Array]:
    nk = tbl.column(nkey).to_pylist()
    nation = pa.array([nname[k] for k in nk], pa.string())
    reg = pa.array([nreg[k] for k in nk], pa.string())
    city = _city(nation, tbl.column(key).combine_chunks())
    return city, nation, reg


def derive_ssb(tpch: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    nname, nreg = _nation_lookup(tpch)

    c = pq.read_table(tpch / "customer.parquet")
    city, nation, reg = _dim_with_geo(c, "c_custkey", "c_nationkey", nname, nreg)
    pq.write_table(pa.table({
        "c_custkey": c["c_custkey"].cast(pa.int32()), "c_name": c["c_name"].cast(pa.string()),
        "c_address": c["c_address"].cast(pa.string()), "c_city": city, "c_nation": nation,
        "c_region": reg, "c_phone": c["c_phone"].cast(pa.string()),
        "c_mktsegment": c["c_mktsegment"].cast(pa.string())}), out / "customer.parquet", **CHECKSUM_WRITER)

    s = pq.read_table(tpch / "supplier.parquet")
    city, nation, reg = _dim_with_geo(s, "s_suppkey", "s_nationkey", nname, nreg)
    pq.write_table(pa.table({
        "s_suppkey": s["s_suppkey"].cast(pa.int32()), "s_name": s["s_name"].cast(pa.string()),
        "s_address": s["s_address"].cast(pa.string()), "s_city": city, "s_nation": nation,
        "s_region": reg, "s_phone": s["s_phone"].cast(pa.string())}), out / "supplier.parquet", **CHECKSUM_WRITER)

    p = pq.read_table(tpch / "part.parquet")
    mfgr = pc.replace_substring(p["p_mfgr"].cast(pa.string()), "Manufacturer#", "MFGR#")
    category = pc.replace_substring(p["p_brand"].cast(pa.string()), "Brand#", "MFGR#")
    bn = pc.cast(pc.add(pc.subtract(p["p_partkey"], pc.multiply(pc.divide(p["p_partkey"], 40), 40)), 1), pa.string())
    brand1 = pc.binary_join_element_wise(category, bn, "")
    color = pc.list_element(pc.split_pattern(p["p_name"].cast(pa.string()), " "), 0)
    pq.write_table(pa.table({
        "p_partkey": p["p_partkey"].cast(pa.int32()), "p_name": p["p_name"].cast(pa.string()),
        "p_mfgr": mfgr, "p_category": category, "p_brand1": brand1, "p_color": color,
        "p_type": p["p_type"].cast(pa.string()), "p_size": p["p_size"].cast(pa.int32()),
        "p_container": p["p_container"].cast(pa.string())}), out / "part.parquet", **CHECKSUM_WRITER)

    _write_date(out / "date.parquet")
    _write_lineorder(tpch, out / "lineorder.parquet")


def _write_date(path: Path) -> None:
    start, end = dt.date(1992, 1, 1), dt.date(1998, 12, 31)
    rows = []
    d = start
    while d <= end:
        rows.append(d)
        d += dt.timedelta(days=1)
    seasons = {12: "Christmas", 1: "Winter", 2: "Winter", 3: "Spring", 4: "Spring", 5: "Spring",
               6: "Summer", 7: "Summer", 8: "Summer", 9: "Fall", 10: "Fall", 11: "Christmas"}
    holidays = {(1, 1), (7, 4), (12, 25), (12, 24), (11, 11), (5, 30), (9, 1), (10, 12), (2, 14), (12, 31)}
    tbl = pa.table({
        "d_datekey": pa.array([x.year * 10000 + x.month * 100 + x.day for x in rows], pa.int32()),
        "d_date": pa.array([f"{MONTHS[x.month - 1]} {x.day}, {x.year}" for x in rows]),
        "d_dayofweek": pa.array([DAYS[x.weekday()] for x in rows]),
        "d_month": pa.array([MONTHS[x.month - 1] for x in rows]),
        "d_year": pa.array([x.year for x in rows], pa.int32()),
        "d_yearmonthnum": pa.array([x.year * 100 + x.month for x in rows], pa.int32()),
        "d_yearmonth": pa.array([f"{MONTHS[x.month - 1][:3]}{x.year}" for x in rows]),
        "d_daynuminweek": pa.array([(x.isoweekday() % 7) + 1 for x in rows], pa.int32()),
        "d_daynuminmonth": pa.array([x.day for x in rows], pa.int32()),
        "d_daynuminyear": pa.array([x.timetuple().tm_yday for x in rows], pa.int32()),
        "d_monthnuminyear": pa.array([x.month for x in rows], pa.int32()),
        "d_weeknuminyear": pa.array([(x.timetuple().tm_yday - 1) // 7 + 1 for x in rows], pa.int32()),
        "d_sellingseason": pa.array([seasons[x.month] for x in rows]),
        "d_lastdayinweekfl": pa.array([x.weekday() == 5 for x in rows]),
        "d_lastdayinmonthfl": pa.array([(x + dt.timedelta(days=1)).month != x.month for x in rows]),
        "d_holidayfl": pa.array([(x.month, x.day) in holidays for x in rows]),
        "d_weekdayfl": pa.array([x.weekday() < 5 for x in rows]),
    })
    pq.write_table(tbl, path, **CHECKSUM_WRITER)


def _write_lineorder(tpch: Path, path: Path) -> None:
    o = pq.read_table(tpch / "orders.parquet",
                      columns=["o_orderkey", "o_custkey", "o_orderdate", "o_orderpriority",
                               "o_shippriority", "o_totalprice"])
    o = o.set_column(3, "o_orderpriority", o["o_orderpriority"].cast(pa.string())).sort_by("o_orderkey")
    okeys = o["o_orderkey"].to_numpy()
    o_cust = o["o_custkey"].to_numpy().astype(np.int32)
    o_date = _yyyymmdd(o["o_orderdate"].combine_chunks())
    o_prio = o["o_orderpriority"].combine_chunks().cast(pa.string())
    o_ship = o["o_shippriority"].to_numpy().astype(np.int32)
    o_total = _cents(o["o_totalprice"].combine_chunks()).astype(np.int32)
    del o
    ps = pq.read_table(tpch / "partsupp.parquet", columns=["ps_partkey", "ps_suppkey", "ps_supplycost"])
    smax = int(pc.max(ps["ps_suppkey"]).as_py()) + 1
    pskey = ps["ps_partkey"].to_numpy().astype(np.int64) * smax + ps["ps_suppkey"].to_numpy()
    order = np.argsort(pskey, kind="stable")
    pskey = pskey[order]
    pscost = _cents(ps["ps_supplycost"].combine_chunks())[order].astype(np.int32)
    del ps
    li = pq.ParquetFile(tpch / "lineitem.parquet")
    cols = ["l_orderkey", "l_linenumber", "l_partkey", "l_suppkey", "l_quantity", "l_extendedprice",
            "l_discount", "l_tax", "l_commitdate", "l_shipmode"]
    writer = None
    try:
        for i in range(li.num_row_groups):
            b = li.read_row_group(i, columns=cols)
            lk = b["l_orderkey"].to_numpy()
            oi = np.searchsorted(okeys, lk)
            pk = b["l_partkey"].to_numpy().astype(np.int64) * smax + b["l_suppkey"].to_numpy()
            pi = np.searchsorted(pskey, pk)
            price = _cents(b["l_extendedprice"].combine_chunks())
            disc = _cents(b["l_discount"].combine_chunks())
            tax = _cents(b["l_tax"].combine_chunks())
            qty = np.round(b["l_quantity"].combine_chunks().cast(pa.float64()).to_numpy(zero_copy_only=False)).astype(np.int32)
            t = pa.table({
                "lo_orderkey": pa.array(lk.astype(np.int64)),
                "lo_linenumber": pa.array(b["l_linenumber"].to_numpy().astype(np.int32)),
                "lo_custkey": pa.array(o_cust[oi]),
                "lo_partkey": pa.array(b["l_partkey"].to_numpy().astype(np.int32)),
                "lo_suppkey": pa.array(b["l_suppkey"].to_numpy().astype(np.int32)),
                "lo_orderdate": pa.array(o_date[oi]),
                "lo_orderpriority": o_prio.take(pa.array(oi)),
                "lo_shippriority": pa.array(o_ship[oi]),
                "lo_quantity": pa.array(qty),
                "lo_extendedprice": pa.array(price.astype(np.int32)),
                "lo_ordtotalprice": pa.array(o_total[oi]),
                "lo_discount": pa.array(disc.astype(np.int32)),
                "lo_revenue": pa.array((price * (100 - disc) // 100).astype(np.int32)),
                "lo_supplycost": pa.array(pscost[pi]),
                "lo_tax": pa.array(tax.astype(np.int32)),
                "lo_commitdate": pa.array(_yyyymmdd(b["l_commitdate"].combine_chunks())),
                "lo_shipmode": b["l_shipmode"].combine_chunks().cast(pa.string()),
            })
            if writer is None:
                writer = pq.ParquetWriter(path, t.schema, **CHECKSUM_WRITER)
            writer.write_table(t)
    finally:
        if writer is not None:
            writer.close()


def generate_ssb(sf: float, out: str | Path, tpch_dir: str | Path | None = None) -> Path:
    """Write SSB tables to ``out`` (TPC-H is generated into a temporary folder unless given)."""
    out = Path(out)
    tmp = None
    if tpch_dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="sluice-tpch-", dir=out.parent if out.parent.exists() else None))
        generate_tpch(sf, tmp, tables=("region", "nation", "supplier", "customer", "part", "partsupp",
                                       "orders", "lineitem"))
        tpch_dir = tmp
    try:
        derive_ssb(Path(tpch_dir), out)
    except BaseException:
        for t in SSB_TABLES:
            (out / f"{t}.parquet").unlink(missing_ok=True)
        raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return out
