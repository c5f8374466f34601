"""PARSE_PATH and the separator options of the path functions against DuckDB: a path's parts
(a leading separator kept as the first part, empty parts dropped, ``[]`` for the empty path,
NULL for NULL), every separator option, and option names as DuckDB reads them -- spelled
exactly, any other string (``'FORWARD_SLASH'``, ``'@'``) the default, both slashes (sluice
lower-cased the name: a wrong answer)."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def path_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("paths")
    r = random.Random(3)
    parts = ["a", "bc", "é", "", ".", "..", "x.csv", "12 ch,ars"]
    seps = ["/", "\\", "//", "/\\"]
    p = [None if r.random() < .1 else "".join(r.choice(seps + parts) for _ in range(r.randint(0, 6))) for _ in range(250)]
    p[:6] = ["", "/", "///", "\\", "/a//b/", "path/to/file.csv\\file2.csv"]
    pq.write_table(pa.table({"i": pa.array(range(len(p)), pa.int64()), "p": p}), root / "p.parquet", row_group_size=33)
    return root


def _same(sql, root, connect, **settings):
    compare(connect(root, **settings).sql(sql).to_arrow(), duckdb_connect(root).sql(sql).to_arrow_table())


OPTIONS = ["'system'", "'both_slash'", "'forward_slash'", "'backslash'", "'FORWARD_SLASH'", "'Backslash'", "'@'", "''",
           "NULL"]


@pytest.mark.parametrize("opt", OPTIONS)
def test_parse_path(opt, path_dir, connect):
    _same(f"select i, p, parse_path(p), parse_path(p, {opt}) from p", path_dir, connect)


@pytest.mark.parametrize("opt", OPTIONS)
def test_the_other_path_functions_read_options_alike(opt, path_dir, connect):
    _same(f"select i, parse_filename(p, {opt}), parse_filename(p, true, {opt}), parse_dirname(p, {opt}), "
          f"parse_dirpath(p, {opt}) from p", path_dir, connect)


def test_parse_path_of_constants_and_small_chunks(path_dir, connect):
    _same("select parse_path(NULL), parse_path(NULL, 'system'), parse_path(''), parse_path('/\\/', 'both_slash'), "
          "parse_path('\\a\\b', 'backslash'), len(parse_path('a/b/c'))", path_dir, connect)
    _same("select i, parse_path(p)[1], len(parse_path(p, 'backslash')) from p", path_dir, connect, chunk_rows=7)


@pytest.mark.parametrize("sql", ["select parse_path() from p", "select parse_path(p, true, 'system') from p"])
def test_wrong_arguments(sql, path_dir, connect):
    with pytest.raises(Exception):
        duckdb_connect(path_dir).sql(sql).fetchall()
    with pytest.raises(PlanError):
        connect(path_dir).sql(sql).to_arrow()


def test_parse_filename_reads_its_middle_option_as_a_boolean(path_dir, connect):
    # PARSE_FILENAME(p, 'true', 'system'): the trim option, a string cast to BOOLEAN (it was
    # read as a separator name, the extension kept: a wrong answer)
    _same("select i, parse_filename(p, 'true', 'system'), parse_filename(p, 'T', NULL), parse_filename(p, 'false', "
          "'backslash'), parse_filename(p, NULL, 'forward_slash'), parse_filename(p, 'true') from p", path_dir, connect)
    with pytest.raises(PlanError):
        connect(path_dir).sql("select parse_filename(p, 'x', 'system') from p").to_arrow()
