"""The output folder of a generator: never mixes benchmarks, replaces tables only when told."""

from __future__ import annotations

import shutil
from pathlib import Path

from sluice.datagen.clickbench import CLICKBENCH_TABLES
from sluice.datagen.events import EVENTS_TABLES
from sluice.datagen.ssb import SSB_TABLES
from sluice.datagen.tpcds import TPCDS_TABLES
from sluice.datagen.tpch import TPCH_TABLES
from sluice.errors import DataError


def prepare_folder(benchmark: str, out, force: bool) -> None:
    """Make ``out`` ready for ``benchmark``'s tables, or refuse in one line: a folder holding
    another benchmark's tables is never mixed into (SSB's customer, supplier and part are not
    TPC-H's), and existing tables of this benchmark are replaced only with ``force`` (the
    generators skip files that exist, which would leave old data under a new scale factor)."""
    mine = {"tpch": TPCH_TABLES, "ssb": SSB_TABLES, "tpcds": TPCDS_TABLES, "clickbench": CLICKBENCH_TABLES,
            "events": EVENTS_TABLES}[benchmark]
    out = Path(out)
    if not out.is_dir():
        return
    present = sorted({p.stem for p in out.glob("*.parquet")} |
                     {p.name for p in out.iterdir() if p.is_dir() and any(p.glob("*.parquet"))})
    foreign = [t for t in present if t not in mine]
    if foreign:
        raise DataError(f"{out} already holds other tables ({', '.join(foreign[:4])}"
                        f"{', ...' if len(foreign) > 4 else ''}); generate {benchmark} into another folder")
    if present and not force:
        raise DataError(f"{out} already holds {benchmark} tables ({', '.join(present[:4])}"
                        f"{', ...' if len(present) > 4 else ''}); pass --force to replace them")
    for t in present:
        f = out / f"{t}.parquet"
        if f.exists():
            f.unlink()
        if (out / t).is_dir():
            shutil.rmtree(out / t)
