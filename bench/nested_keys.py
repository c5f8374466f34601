"""Nested values as keys against DuckDB: GROUP BY / DISTINCT / ORDER BY / comparison on lists
and structs, LIST aggregation and REGEXP_EXTRACT_ALL over ``sluice datagen events`` (issue 51).
Best of two runs each, both engines on ``--threads`` threads.

    python bench/nested_keys.py DATA_DIR [--threads 2]   # DATA_DIR holds events.parquet
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sluice  # noqa: E402

QUERIES = [
    "select tags, count(*) from events group by tags",
    "select count(*) from (select distinct user from events)",
    "select event_id, tags from events order by tags, event_id limit 10",
    "select count(*) from events where scores < [500]",
    "select kind, len(list(event_id order by event_id)) from events group by kind",
    "select sum(len(regexp_extract_all(user.name, '[aeiou]+'))) from events",
]


def main() -> None:
    data = sys.argv[1]
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 2
    con = sluice.connect(data, device="cpu", threads=threads)
    duck = duckdb.connect()
    duck.execute(f"set threads to {threads}")
    duck.execute(f"create view events as select * from read_parquet('{Path(data) / 'events.parquet'}')")
    for q in QUERIES:
        best = []
        for run in (lambda: con.sql(q).to_arrow(), lambda: duck.sql(q).fetchall()):
            times = []
            for _ in range(2):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
            best.append(min(times))
        print(f"{best[0]:7.2f} s sluice  {best[1]:7.2f} s duckdb  {q}")


if __name__ == "__main__":
    main()
