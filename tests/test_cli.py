"""The command line: results, files, and every bad-input case ending in one clean line."""

import os
import subprocess
import sys

from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect


def sluice(*args, cwd=None):
    r = subprocess.run([sys.executable, "-m", "sluice.cli", *args], capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return r.returncode, r.stdout, r.stderr


def assert_one_line_error(rc, out, err, expect):
    assert rc != 0
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert expect in lines[0].lower(), lines[0]


def test_query_prints_table(tpch_dir):
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu",
                          "select n_name, n_regionkey from nation where n_nationkey < 3 order by n_name")
    assert rc == 0, err
    assert "ALGERIA" in out and "ARGENTINA" in out and "3 rows" in out


def test_query_file_to_parquet_and_csv(tpch_dir, tmp_path, tpch_duck):
    q = tmp_path / "q.sql"
    q.write_text("select o_orderpriority, count(*) as n from orders group by o_orderpriority")
    theirs = tpch_duck.sql(q.read_text()).to_arrow_table()
    for name in ("out.parquet", "out.csv"):
        out = tmp_path / name
        rc, _, err = sluice("query", "--data", str(tpch_dir), "-f", str(q), "-o", str(out), "--device", "cpu")
        assert rc == 0, err
        ours = pq.read_table(out) if name.endswith("parquet") else pacsv.read_csv(out)
        compare(ours, theirs)
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "out.parquet", "q.sql"]


def test_explain(tpch_dir):
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--explain",
                          "select count(*) from lineitem, orders where l_orderkey = o_orderkey")
    assert rc == 0, err
    assert "HashJoin" in out and "Scan lineitem" in out


@pytest.mark.parametrize("sql,expect", [
    ("selec * from nation", "syntax error"),
    ("select * from nation where", "syntax error"),
    ("select * from nosuchtable", "unknown table"),
    ("select nosuchcol from nation", "unknown column"),
    ("select n_name + 1 from nation", "cannot apply"),
    ("select * from nation where n_name > 3", "cannot compare"),
    ("select sum(n_name) from nation", "needs a number"),
    ("select bool_and(n_nationkey) from nation", "needs a boolean"),
    ("select n_name, count(*) from nation", "group by"),
    ("select * from nation where n_nationkey = (select n_nationkey from nation)", "more than one row"),
])
def test_bad_sql(tpch_dir, tmp_path, sql, expect):
    out = tmp_path / "result.parquet"
    rc, stdout, err = sluice("query", "--data", str(tpch_dir), "-o", str(out), sql)
    assert_one_line_error(rc, stdout, err, expect)
    assert not out.exists()
    assert os.listdir(tmp_path) == []  # no partial or temporary file left behind


def test_missing_data_dir(tmp_path):
    assert_one_line_error(*sluice("query", "--data", str(tmp_path / "nope"), "select 1"), "does not exist")


def test_corrupt_file(tmp_path):
    (tmp_path / "broken.parquet").write_bytes(b"this is not parquet at all" * 10)
    assert_one_line_error(*sluice("query", "--data", str(tmp_path), "select * from broken"), "not a readable parquet")


def test_truncated_file(tpch_dir, tmp_path):
    data = (tpch_dir / "nation.parquet").read_bytes()
    (tmp_path / "nation.parquet").write_bytes(data[: len(data) // 2])
    assert_one_line_error(*sluice("query", "--data", str(tmp_path), "select * from nation"), "parquet")


def test_missing_query_file(tpch_dir):
    assert_one_line_error(*sluice("query", "--data", str(tpch_dir), "-f", "/no/such.sql"), "cannot read")


@pytest.mark.parametrize("setting,expect", [
    ("host_memory_limit=10", "host_memory_limit"),
    ("device_memory_limit=-5", "device_memory_limit"),
    ("host_memory_limit=lots", "cannot read"),
    ("chunk_rows=-1", "chunk_rows"),
    ("chunk_rows=abc", "integer"),
    ("nosuchsetting=1", "unknown setting"),
    ("device=tpu", "device"),
    ("row_group_pruning=maybe", "true or false"),
    ("scan.host_memory_limit=1GiB", "area memory, not scan"),
    ("scans.chunk_rows=5", "names no settings area"),
])
def test_bad_settings(tpch_dir, setting, expect):
    assert_one_line_error(*sluice("query", "--data", str(tpch_dir), "--set", setting, "select 1"), expect)


def test_settings_by_area_from_set_and_environment(tpch_dir):
    sql = "select count(*) from lineitem"
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", "--set", "scan.chunk_rows=5000",
                          "--analyze", sql)
    assert rc == 0, err
    rc, out, err = sluice_env({"SLUICE__SCAN__CHUNK_ROWZ": "5000"}, "query", "--data", str(tpch_dir), sql)
    assert_one_line_error(rc, out, err, "unknown setting 'chunk_rowz' in area scan")


def sluice_env(env, *args):
    r = subprocess.run([sys.executable, "-m", "sluice.cli", *args], capture_output=True, text=True,
                       env={**os.environ, "PYTHONWARNINGS": "ignore", **env})
    return r.returncode, r.stdout, r.stderr


def test_bad_output_suffix(tpch_dir, tmp_path):
    out = tmp_path / "x.json"
    assert_one_line_error(*sluice("query", "--data", str(tpch_dir), "-o", str(out), "select 1"), ".parquet or .csv")
    assert not out.exists()


def test_unwritable_output(tpch_dir, tmp_path):
    out = tmp_path / "no" / "dir" / "x.csv"
    assert_one_line_error(*sluice("query", "--data", str(tpch_dir), "-o", str(out), "select 1"), "does not exist")


def test_datagen_tpch_cli(tmp_path):
    rc, _, err = sluice("datagen", "tpch", "--sf", "0.01", "--out", str(tmp_path / "t"))
    assert rc == 0, err
    con = duckdb_connect(tmp_path / "t")
    assert con.execute("select count(*) from nation").fetchone()[0] == 25
    assert con.execute("select count(*) from lineitem").fetchone()[0] > 50000


def test_ssb_derivation_matches_tpch(tpch_dir, ssb_dir):
    """lineorder is lineitem joined with orders: check row count and money columns with DuckDB."""
    con = duckdb_connect(tpch_dir)
    ssb = duckdb_connect(ssb_dir)
    expect = con.execute(
        "select count(*), sum(cast(round(l_extendedprice * 100) as bigint)), "
        "sum(cast(round(o_totalprice * 100) as bigint)), sum(year(o_orderdate) * 10000 + month(o_orderdate) * 100 "
        "+ day(o_orderdate)) from lineitem join orders on l_orderkey = o_orderkey").fetchone()
    got = ssb.execute("select count(*), sum(lo_extendedprice), sum(lo_ordtotalprice), sum(lo_orderdate) "
                  "from lineorder").fetchone()
    assert tuple(int(x) for x in got) == tuple(int(x) for x in expect)
    cities = ssb.execute("select count(distinct c_city), min(length(c_city)), max(length(c_city)) from customer").fetchone()
    assert cities[1] == cities[2] == 10
    assert ssb.execute("select count(*) from date").fetchone()[0] == 2557


def test_refusal_is_one_line_exit_1(tpch_dir):
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu",
                          "select n_name from nation using sample 10 percent")
    assert rc == 1 and out == ""
    assert_one_line_error(rc, out, err, "unsupported: using sample")


def test_overflow_is_one_line_exit_1(tpch_dir):
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", "select 9223372036854775807 + 1")
    assert rc == 1 and out == ""
    assert_one_line_error(rc, out, err, "overflow")


def test_non_utf8_query_file(tpch_dir, tmp_path):
    q = tmp_path / "latin1.sql"
    q.write_bytes("select 'café' as x".encode("latin-1"))
    rc, out, err = sluice("query", "--data", str(tpch_dir), "-f", str(q))
    assert rc == 1 and out == ""
    assert_one_line_error(rc, out, err, "not utf-8")


def test_demo_answers_tpch_queries_on_existing_data(tpch_dir):
    rc, out, err = sluice("demo", "--data", str(tpch_dir), "--device", "cpu", "--queries", "q06,q01")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("q06") and "1 rows" in lines[1]
    assert lines[2].startswith("q01") and "4 rows" in lines[2]
    assert "q06's answer" in out and "revenue" in out  # the first query's table follows


def test_demo_generates_data_when_absent(tmp_path):
    rc, out, err = sluice("demo", "--sf", "0.01", "--data", str(tmp_path / "d"), "--device", "cpu",
                          "--queries", "q01")
    assert rc == 0, err
    assert (tmp_path / "d" / "lineitem.parquet").exists() and "generated TPC-H" in err


def test_demo_unknown_query_is_one_line(tpch_dir):
    rc, out, err = sluice("demo", "--data", str(tpch_dir), "--queries", "q99")
    assert_one_line_error(rc, out, err, "unknown queries q99")


def test_version_and_help_do_not_import_torch():
    rc, out, _ = sluice("--version")
    assert rc == 0 and out.startswith("sluice ")
    r = subprocess.run([sys.executable, "-c", "import sys, sluice.cli, sluice.errors; "
                        "sluice.cli._parser(); print('torch' in sys.modules)"], capture_output=True, text=True)
    assert r.stdout.strip() == "False", r.stderr


def test_python_m_sluice_help_imports_no_torch_numpy_or_pyarrow():
    """The real entry point (``python -m sluice``, which asks whether it runs under torchrun)
    and not only the parser: it loaded torch through the ranks' group module once (issue 48)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "sluice", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage: sluice" in r.stdout, r.stderr[-2000:]
    loaded = {ln.rsplit("|", 1)[1].strip() for ln in r.stderr.splitlines() if ln.startswith("import time:")}
    assert "sluice.cli" in loaded
    assert not loaded & {"torch", "numpy", "pyarrow", "sqlglot"}, sorted(loaded & {"torch", "numpy", "pyarrow", "sqlglot"})


def test_doctor_and_inspect_do_not_import_torch(tpch_dir):
    code = ("import sys, contextlib, io, sluice.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    sluice.cli.run(['doctor', {str(tpch_dir)!r}, '--for', 'gpu'])\n"
            f"    sluice.cli.run(['inspect', {str(tpch_dir / 'region.parquet')!r}])\n"
            "print('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "False", r.stderr


def test_query_from_stdin_and_output_formats(tpch_dir):
    import json
    sql = "select n_nationkey, n_name from nation where n_nationkey < 3 order by n_nationkey"
    r = subprocess.run([sys.executable, "-m", "sluice.cli", "query", "--data", str(tpch_dir), "--device", "cpu",
                        "--format", "json", "-"], input=sql, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    want = duckdb_connect(tpch_dir).sql(sql).fetchall()
    assert [(x["n_nationkey"], x["n_name"]) for x in rows] == want
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", "--format", "csv", sql)
    assert rc == 0 and out.splitlines() == ["n_nationkey,n_name"] + [f"{k},{n}" for k, n in want]  # quoted where needed
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", "--format", "markdown", sql)
    assert rc == 0 and out.splitlines()[0] == "| n_nationkey | n_name |" and "| 0 | ALGERIA |" in out
    r = subprocess.run([sys.executable, "-m", "sluice.cli", "query", "--data", str(tpch_dir), "-"], input="  ",
                       capture_output=True, text=True)
    assert_one_line_error(r.returncode, r.stdout, r.stderr, "no query on stdin")


def test_describe_show_summarize_on_the_command_line(tpch_dir):
    for sql, expect in (("describe nation", "n_regionkey"), ("show tables", "lineitem"),
                        ("summarize region", "r_name")):
        rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", sql)
        assert rc == 0 and expect in out, err


def test_output_files_keep_the_umask_mode_and_rewrites_keep_theirs(tpch_dir, tmp_path):
    import shutil
    old = os.umask(0o022)
    try:
        out = tmp_path / "r.csv"
        rc, _, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", "-o", str(out), "select 1 as a")
        assert rc == 0, err
        assert out.stat().st_mode & 0o777 == 0o644
        f = tmp_path / "nation.parquet"
        shutil.copy(tpch_dir / "nation.parquet", f)
        os.chmod(f, 0o640)
        rc, _, err = sluice("rewrite", str(f), str(f), "--for", "cpu")  # in place
        assert rc == 0, err
        assert f.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_datagen_into_an_existing_folder(tmp_path):
    import pyarrow.parquet as pq
    out = tmp_path / "t"
    rc, _, err = sluice("datagen", "tpch", "--sf", "0.01", "--out", str(out))
    assert rc == 0, err
    small = pq.read_metadata(out / "orders.parquet").num_rows
    assert_one_line_error(*sluice("datagen", "tpch", "--sf", "0.02", "--out", str(out)), "--force")
    assert pq.read_metadata(out / "orders.parquet").num_rows == small  # untouched
    rc, _, err = sluice("datagen", "tpch", "--sf", "0.02", "--out", str(out), "--force")
    assert rc == 0, err
    assert pq.read_metadata(out / "orders.parquet").num_rows == 2 * small
    assert_one_line_error(*sluice("datagen", "ssb", "--sf", "0.01", "--out", str(out), "--force"), "other tables")
    assert not (out / "lineorder.parquet").exists()


def test_verify_agreement_and_a_difference(tpch_dir, monkeypatch):
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", "--verify",
                          "select n_regionkey, count(*) from nation group by 1 order by 1")
    assert rc == 0 and "agrees with DuckDB (5 rows x 2 columns)" in err and "5 rows" in out
    # A deliberately different engine result: the report names the first difference.
    import pyarrow as pa

    import sluice as sl
    from sluice.errors import ExecutionError
    rel = sl.connect(tpch_dir, device="cpu").sql("select n_nationkey, n_name from nation order by n_nationkey")
    good = rel.to_arrow()
    assert "agrees" in rel.verify(good)
    names = good.column("n_name").to_pylist()
    names[7] = "ATLANTIS"
    bad = good.set_column(1, "n_name", pa.array(names))
    with pytest.raises(ExecutionError, match="differs from DuckDB: .*ATLANTIS"):
        rel.verify(bad)
    assert_one_line_error(*sluice("query", "--data", str(tpch_dir), "--verify", "-o", "x.csv", "select 1"),
                          "without -o")


def test_progress_bar_shows_rate_t_min_fraction_bound_stage_and_time_left(tpch_dir, tmp_path):
    """On a terminal, a scan shows bytes, rate, the fraction of the calibrated storage rate
    (T_min's), the stage bounding the run so far and the time left; the answer is unchanged."""
    import json
    import re
    pexpect = pytest.importorskip("pexpect")
    cache = tmp_path / "cache"
    (cache / "sluice").mkdir(parents=True)
    (cache / "sluice" / "calibration.json").write_text(json.dumps(
        {str(tpch_dir.resolve()): {"read_cached_bps": 2e9, "read_cold_bps": 5e8}}))
    sql = "select count(*), max(l_comment) from lineitem"
    child = pexpect.spawn(str(Path(sys.executable).with_name("sluice")),
                          ["query", "--data", str(tpch_dir), "--device", "cpu", "--set", "chunk_rows=4096", sql],
                          # COLUMNS / LINES as the pseudo-terminal's size: rich reads them before the
                          # terminal, and under pytest-xdist they held a narrower width (bars cut short)
                          env={**os.environ, "TERM": "xterm", "XDG_CACHE_HOME": str(cache), "COLUMNS": "200",
                               "LINES": "30"}, encoding="utf-8", timeout=120, dimensions=(30, 200))
    child.expect(pexpect.EOF)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", child.before)
    bars = [ln for ln in text.splitlines() if "scanning" in ln]
    assert bars, text
    assert any(re.search(r"MiB/s \(\d+% of T_min\) bound by (read|decode|compute) .*left", b) for b in bars), bars
    want = duckdb_connect(tpch_dir).execute(sql).fetchall()[0]
    assert str(want[0]) in text


def test_progress_starts_over_when_the_query_reruns():
    # A rerun after a CUDA out-of-memory error scans again: the bar starts from zero, not past 100%.
    from sluice.commands.progress import Progress as _Progress

    class Bar:
        def __init__(self):
            self.done = 0

        def advance(self, task, n):
            self.done += n

        def reset(self, task):
            self.done = 0
    p = _Progress(0)
    p._p, p._task = Bar(), 0
    p.attach("first run")
    p(100)
    p.attach("rerun")
    p(30)
    assert p._p.done == 30
