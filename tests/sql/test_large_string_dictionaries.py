"""String dictionaries past Arrow's 2 GiB ``string`` limit become ``large_string`` (DISTINCT over
100 M md5 digests failed with "offset overflow while concatenating arrays"). The limit is lowered
here so that tiny data takes the same path: every query below mixes ``string`` and
``large_string`` dictionaries across chunks, and must answer as DuckDB does, as a user runs it,
in 3-row chunks and spilled."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.kernels import buffers
from sluice.testing.oracle import compare, duckdb_connect

QUERIES = [
    "select distinct s from t order by s",
    "select s, count(*), sum(i) from t group by s order by s",
    "select count(*) from (select distinct s from t)",
    "select count(distinct s), min(s), max(s) from t",
    "select t.s, u.k from t join u on t.s = u.s order by t.i",
    "select s from t union select s from u order by 1",
    "select upper(s) as x, length(s) as n from t where s like '%a%' order by i",
    "select s, row_number() over (partition by s order by i) from t order by i",
    "select string_agg(s, ',' order by i) from t",
]


@pytest.fixture(scope="module")
def words_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("large_strings")
    r = random.Random(5)
    words = ["".join(r.choice("abcxyzé") for _ in range(r.randint(1, 12))) for _ in range(60)]
    n = 400
    s = [None if r.random() < .05 else r.choice(words) for _ in range(n)]
    pq.write_table(pa.table({"i": pa.array(range(n), pa.int64()), "s": s}), root / "t.parquet",
                   row_group_size=37)
    pq.write_table(pa.table({"s": words[::3], "k": pa.array(range(20), pa.int64())}), root / "u.parquet")
    return root


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 3}, {"chunk_rows": 3, "force_spill": True}],
                         ids=["default", "chunks3", "spilled"])
@pytest.mark.parametrize("sql", QUERIES)
def test_past_the_string_limit(words_dir, connect, monkeypatch, settings, sql):
    monkeypatch.setattr(buffers, "STRING_BYTES_MAX", 40)
    ours = connect(words_dir, **settings).sql(sql).to_arrow()
    theirs = duckdb_connect(words_dir).sql(sql).to_arrow_table()
    compare(ours, theirs)


def test_concat_strings_widens_only_past_the_limit(monkeypatch):
    small = buffers.concat_strings([pa.array(["ab", None]), pa.array(["c"])])
    assert small.type == pa.string() and small.to_pylist() == ["ab", None, "c"]
    monkeypatch.setattr(buffers, "STRING_BYTES_MAX", 2)
    big = buffers.concat_strings([pa.array(["ab", None]), pa.array(["c"], pa.large_string())])
    assert big.type == pa.large_string() and big.to_pylist() == ["ab", None, "c"]
