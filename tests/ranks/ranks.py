"""Run a list of queries on N local ranks in one job and check each answer against DuckDB."""

from __future__ import annotations

from pathlib import Path

from sluice.launch import run_job
from sluice.testing.oracle import compare, duckdb_connect
from sluice.testing.queries import order_by_columns


def check_on_ranks(data: Path, queries: dict[str, str], ranks: int, settings: dict | None = None,
                   order=None) -> None:
    """One job of ``ranks`` ranks answers every query; each answer must equal DuckDB's. All
    differences are reported together. ``order(sql, columns)``: the output columns whose order
    is checked (default: those the final ORDER BY names)."""
    names = sorted(queries)
    job = {"kind": "queries", "data": str(data), "queries": [queries[n] for n in names],
           "settings": {"device": "cpu", "dist_timeout_s": 60, **(settings or {})}}
    results = run_job(ranks, job)
    assert len(results) == len(names)
    duck = duckdb_connect(data)
    bad = []
    for name, ours in zip(names, results):
        sql = queries[name]
        theirs = duck.sql(sql).to_arrow_table()
        try:
            compare(ours, theirs, (order or order_by_columns)(sql, ours.column_names))
        except AssertionError as e:
            bad.append(f"{name}: {str(e).splitlines()[0]}")
    assert not bad, f"{len(bad)} of {len(names)} differ from DuckDB on {ranks} ranks {settings}:\n" + "\n".join(bad)
