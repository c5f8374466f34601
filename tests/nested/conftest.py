"""What the nested-data tests share: DuckDB over a module's ``events_dir`` (each module
generates its own events, with its own size and seed), and sluice over it under each forced path
(as a user runs it, in 7-row chunks, spilled)."""

import pytest

import sluice
from sluice.testing.oracle import duckdb_connect

SETTINGS = {"default": {}, "chunks7": {"chunk_rows": 7}, "spilled": {"chunk_rows": 64, "force_spill": True}}


@pytest.fixture(scope="module")
def duck(events_dir):
    return duckdb_connect(events_dir)


@pytest.fixture(scope="module", params=list(SETTINGS))
def con(request, events_dir):
    return sluice.connect(str(events_dir), device="cpu", **SETTINGS[request.param])
