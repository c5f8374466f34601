import pytest

import sluice
from sluice.config import Config
from sluice.errors import ConfigError, DataError, PlanError


def test_defaults_validate():
    c = Config()
    assert c.device == "auto" and c.chunk_rows == 1 << 20


def test_env_overrides_and_keywords_win():
    c = Config.from_settings({"chunk_rows": "4096"}, environ={"SLUICE_CHUNK_ROWS": "99", "SLUICE_IO_THREADS": "3"})
    assert c.chunk_rows == 4096 and c.io_threads == 3


def test_area_environment_and_dotted_settings():
    env = {"SLUICE__MEMORY__HOST_MEMORY_LIMIT": "1GiB", "SLUICE__DIST__EXCHANGE": "chunked"}
    c = Config.from_settings({"scan.chunk_rows": 5000}, environ=env)
    assert (c.host_memory_limit, c.exchange, c.chunk_rows) == (1 << 30, "chunked", 5000)
    # the same value under both names is fine (compared as values: true is 1); keywords still
    # win over the environment
    c = Config.from_settings({"exchange": "blocking", "scan.prefetch": "on", "prefetch": True},
                             environ={**env, "SLUICE_EXCHANGE": "chunked", "SLUICE__SCAN__PREFETCH": "true",
                                      "SLUICE_PREFETCH": "1"})
    assert c.exchange == "blocking" and c.prefetch


@pytest.mark.parametrize("environ,settings,expect", [
    ({"SLUICE__SCAN__HOST_MEMORY_LIMIT": "1GiB"}, {}, "area memory, not scan"),
    ({"SLUICE__SCANS__CHUNK_ROWS": "5"}, {}, "names no settings area"),
    ({"SLUICE__SCAN__CHUNK_ROWZ": "5"}, {}, "unknown setting 'chunk_rowz'"),
    ({"SLUICE__SCAN": "5"}, {}, "names no settings area"),
    ({"SLUICE__SCAN__CHUNK_ROWS": "5", "SLUICE_CHUNK_ROWS": "6"}, {}, "two values"),
    ({}, {"memory.chunk_rows": 5}, "area scan, not memory"),
    ({}, {"scan.chunk_rows": -1}, "chunk_rows must be at least 1"),
    ({}, {"scan.chunk_rows": 5, "chunk_rows": 7}, "scan.chunk_rows and chunk_rows give chunk_rows two values"),
])
def test_bad_area_settings(environ, settings, expect):
    with pytest.raises(ConfigError, match=expect):
        Config.from_settings(settings, environ=environ)


def test_every_setting_has_one_area_and_the_settings_page_says_which():
    from pathlib import Path

    from sluice.config import AREAS, AREA_OF
    listed = [k for keys in AREAS.values() for k in keys]
    assert sorted(listed) == sorted(Config.keys())  # each once
    page = (Path(__file__).parents[2] / "docs" / "settings.md").read_text()
    area, found = None, {}
    for ln in page.splitlines():
        if ln.startswith("## "):
            area = ln[3:].strip()
        elif ln.startswith("### `"):
            found[ln[5:].strip("`")] = area
    assert found == AREA_OF


def test_sizes_parse():
    c = Config.from_settings({"host_memory_limit": "2GiB", "device_memory_limit": "512MiB"}, environ={})
    assert c.host_memory_limit == 2 << 30 and c.device_memory_limit == 512 << 20


@pytest.mark.parametrize("key,value", [("chunk_rows", -1), ("threads", -1), ("device", "gpu"),
                                       ("host_memory_limit", "1kb"), ("io_threads", -1), ("nope", 1),
                                       ("scan_mode", "fast"), ("recursion_limit", 0), ("exchange_wire", "nccl")])
def test_bad_values(key, value):
    with pytest.raises(ConfigError):
        Config.from_settings({key: value}, environ={})


def test_connect_keywords(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu", chunk_rows=1000)
    assert con.config.chunk_rows == 1000
    with pytest.raises(ConfigError):
        sluice.connect(tpch_dir, chunk_size=5)


def test_api_results(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    rel = con.sql("select n_nationkey, n_name from nation order by n_nationkey")
    assert rel.to_arrow().num_rows == 25
    assert list(rel.to_pandas()["n_name"])[:2] == ["ALGERIA", "ARGENTINA"]
    t = con.sql("select n_nationkey * 2 as k from nation order by k").to_torch()
    assert t["k"][-1].item() == 48
    with pytest.raises(PlanError, match="'n_name'"):
        con.sql("select n_name from nation").to_torch()
    s = con.sql("select case when n_nationkey = 1 then null else n_name end as n from nation "
                "order by n_nationkey").to_torch(strings="codes")["n"]
    names = rel.to_arrow().column("n_name").to_pylist()
    decoded = [None if c < 0 else s.dictionary[c] for c in s.codes.tolist()]
    assert decoded == [None if i == 1 else n for i, n in enumerate(names)]
    assert "Scan nation" in rel.explain()


def test_register(tpch_dir, tmp_path):
    con = sluice.connect(tmp_path, device="cpu")
    con.register("n", tpch_dir / "nation.parquet")
    assert con.sql("select count(*) from n").to_arrow().column(0)[0].as_py() == 25
    with pytest.raises(DataError):
        con.register("x", tmp_path / "missing.parquet")


def test_metadata_cache_hit_and_invalidation(tpch_dir, tmp_path):
    import shutil
    shutil.copy(tpch_dir / "region.parquet", tmp_path / "region.parquet")
    con = sluice.connect(tmp_path, device="cpu")
    con.sql("select count(*) from region").to_arrow()
    misses = con.cache.misses
    con.sql("select r_name from region").to_arrow()
    assert con.cache.misses == misses and con.cache.hits > 0
    shutil.copy(tpch_dir / "nation.parquet", tmp_path / "region.parquet")  # file changes
    with pytest.raises(PlanError):
        con.sql("select r_name from region").to_arrow()


def test_openmp_threads_wait_passively_unless_the_user_says_otherwise():
    import os
    import subprocess
    import sys
    code = "import os, sluice; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "PASSIVE"
    out = subprocess.run([sys.executable, "-c", code], env={**env, "OMP_WAIT_POLICY": "ACTIVE"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ACTIVE"


def test_disabled_rules_are_rules_that_can_be_disabled():
    from sluice.config import OPTIONAL_RULES, Config
    from sluice.errors import ConfigError
    from sluice.plan.rules import RULES
    assert set(OPTIONAL_RULES) <= {r.__name__ for r in RULES}
    Config(disabled_rules="sum_offsets, push_semi_joins")
    with pytest.raises(ConfigError, match="'prune_columns' is not a rule that can be disabled"):
        Config(disabled_rules="sum_offsets,prune_columns")


def test_io_threads_sized_to_the_machine(tpch_dir):
    from sluice.config import auto_io_threads
    assert [auto_io_threads("cuda", n) for n in (1, 2, 4, 16, 64)] == [2, 2, 2, 8, 8]
    assert [auto_io_threads("cpu", n) for n in (2, 16)] == [2, 2]
    con = sluice.connect(tpch_dir, device="cpu")
    assert con.config.io_threads == 2 and con._pool._max_workers == 2
    assert sluice.connect(tpch_dir, device="cpu", io_threads=3).config.io_threads == 3


def test_scan_buffer_sized_to_the_io_threads(tpch_dir):
    from sluice.errors import ConfigError
    con = sluice.connect(tpch_dir, device="cpu", io_threads=8)
    assert con.config.read_ahead_bytes == 1 << 30  # 128 MiB per I/O thread
    assert sluice.connect(tpch_dir, device="cpu", io_threads=2).config.read_ahead_bytes == 256 << 20
    assert sluice.connect(tpch_dir, device="cpu", io_threads=1).config.read_ahead_bytes == 256 << 20
    assert sluice.connect(tpch_dir, device="cpu", io_threads=8,
                          scan_buffer_bytes="64MiB").config.read_ahead_bytes == 64 << 20
    with pytest.raises(ConfigError, match="at least 1MiB"):
        Config(scan_buffer_bytes=1000)


def test_chunk_rows_sized_to_the_device():
    """0 (default): 1 Mi rows on a CPU, 8 Mi on a GPU (issue 50: chunks sized for a GPU); the
    read-ahead buffer and the merge target follow."""
    from sluice.config import DEFAULT_CHUNK_ROWS, GPU_CHUNK_ROWS, auto_scan_buffer
    assert Config(device="cpu").chunk_rows == DEFAULT_CHUNK_ROWS == 1 << 20
    assert Config(device="cuda").chunk_rows == Config(device="cuda:1").chunk_rows == GPU_CHUNK_ROWS == 8 << 20
    assert Config(device="cuda", chunk_rows=5000).chunk_rows == 5000
    assert Config(device="cpu", io_threads=2).read_ahead_bytes == auto_scan_buffer(2) == 256 << 20
    assert Config(device="cuda", io_threads=8).read_ahead_bytes == 8 * (1 << 30)  # 128 MiB a thread per Mi rows
    assert Config(device="cuda").coalesce_target("cuda") == 0  # tasks are as large as merged chunks were
    assert Config(device="cuda", chunk_rows=1 << 20).coalesce_target("cuda") == 8 << 20
