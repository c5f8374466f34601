"""Run DuckDB's own SQL tests (sqllogictest files) through sluice, with DuckDB as the oracle.

Why: issue 47 asks for 0 wrong answers and 0 internal errors on DuckDB's SELECT tests and
SQLite's select tests, and 3/4 of their queries answered; nobody can say where sluice stands
without running them. Each file's statements run in an in-memory DuckDB (python duckdb, the
installed version is the oracle -- not the expected text, which comes from a newer DuckDB);
before each ``query`` the tables and views of DuckDB's main schema are exported to Parquet
(once per state of the file: re-exported only after a statement ran), the SAME query text runs
through ``sluice.connect(folder)`` and through DuckDB, and the two answers are compared with
the test's sort mode and a float tolerance.

Each query is classed: ``pass``; ``wrong`` (both answer, the answers differ); ``internal``
(sluice raised InternalError or a non-sluice exception); ``refused`` (``unsupported: ...``);
``both_error``; ``sluice_error`` (a one-line user error where DuckDB answers); ``duck_error``
(sluice answers where DuckDB raises); ``timeout``; ``skipped`` (a table the export cannot write,
a session setting sluice does not have, a nondeterministic function).

    python bench/duckdb_sqltests.py [TESTS_DIR] [-j 2] [--only SUBSTR] [--file-budget S] [--out FILE.md]

TESTS_DIR holds ``test/sql`` and ``test/sqlite`` (default /tmp/duckdb-tests, extracted once
from the mirror: ``git -C /work/.mirror/duckdb+duckdb/repo archive HEAD test/sql test/sqlite |
tar -x -C /tmp/duckdb-tests``; the script extracts it when missing). Files are run in forked
workers (one DuckDB per file, a per-query alarm and a per-file limit); the report is a dated
markdown in bench/results/.
"""
# ruff: noqa: E402
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MIRROR = "/work/.mirror/duckdb+duckdb/repo"
DEFAULT_DIR = "/tmp/duckdb-tests"
FOLDERS = ["aggregate", "window", "join", "subquery", "filter", "order", "limit", "setops", "cte",
           "function/string", "function/date", "function/numeric", "function/generic", "types/decimal", "cast"]
SQLITE = [f"select{i}.test_slow" for i in range(1, 6)]
QUERY_TIMEOUT_S = 20
#: A file's queries stop after this long (the rest are skipped, counted); SQLite's select files
#: hold 1,000-3,300 queries each. A worker still running a minute later is killed.
FILE_BUDGET_S = 900
FILE_TIMEOUT_S = FILE_BUDGET_S + 60
MAX_LOOP_ITERATIONS = 200
#: ``require`` lines that name a property of the test run, not an extension (the file runs).
RUN_PROPERTIES = {"skip_reload", "no_alternative_verify", "no_extension_autoloading", "notwindows",
                  "64bit", "noforcestorage", "no_latest_storage", "no_vector_verification", "notmingw",
                  "nomusl", "allow_unsigned_extensions", "exact_vector_size", "longdouble_disabled"}
#: SET / PRAGMA names that do not change an answer (anything else: the queries after it are skipped).
HARMLESS_SETTINGS = re.compile(
    r"^\s*(set|pragma|reset)\s+(global\s+|session\s+)?(enable_verification|disable_verification|verify_\w+|"
    r"threads|memory_limit|enable_profiling|disable_profiling|explain_output|enable_progress_bar|"
    r"disable_progress_bar|preserve_insertion_order|force_parallelism|verify_parallelism|"
    r"enable_object_cache|checkpoint_threshold|wal_autocheckpoint|temp_directory|max_temp_directory_size|"
    r"enable_optimizer|disable_optimizer|debug_\w+|storage_compatibility_version|"
    r"perfect_ht_threshold|partitioned_write\w*|force_compression|enable_external_access|"
    r"external_threads|progress_bar_time|verify_external|immediate_transaction_mode|"
    r"allocator_\w+|default_block_size|ordered_aggregate_threshold|pivot_limit|"
    r"arrow_\w+|profiling_\w+|http_\w+|custom_profiling_settings|tracing|TimeZone|"
    r"\w+_threshold|disabled_\w+|prefer_range_joins|force_\w+|late_materialization\w*|"
    r"max_expression_depth|streaming_buffer_size|enable_http_metadata_cache|lock_configuration|"
    r"index_scan_\w+|merge_join_threshold|nested_loop_join_threshold|enable_fsst_vectors)\b",
    re.IGNORECASE)
NONDETERMINISTIC = re.compile(r"\b(random|gen_random_uuid|uuid|uuidv4|uuidv7|setseed|now|current_time|"
                              r"current_timestamp|get_current_time|get_current_timestamp|localtime|"
                              r"localtimestamp|current_localtimestamp|transaction_timestamp|"
                              r"duckdb_\w+|pragma_\w+|current_setting|version|getvariable)\s*\(", re.IGNORECASE)
#: Statements inside a query record that change DuckDB's tables (the export is redone after them).
CHANGES_STATE = re.compile(r"\b(insert\s+into|update\s+\w+\s+set|delete\s+from|create\s+|drop\s+|alter\s+|copy\s+|truncate\s+)",
                           re.IGNORECASE)
#: Queries that are other statements (prepared statements, plans, catalog commands, DML with RETURNING).
NOT_SELECT = {"execute", "explain", "pragma", "describe", "show", "summarize", "call", "insert", "update",
              "delete", "create", "copy", "export", "attach", "set", "checkpoint", "analyze", "prepare",
              "use", "load", "merge", "detach", "install", "begin", "commit", "rollback", "drop", "alter"}
#: Column types Parquet stores as another type (HUGEINT as DOUBLE, ...) or loses a property of
#: (a collation): DuckDB's answer over its table is not an answer over the exported file.
UNFAITHFUL_TYPES = re.compile(r"HUGEINT|BIT\b|BIGNUM|VARINT|UNION\(|COLLATE|TIME WITH TIME ZONE|ENUM\(", re.I)
#: Approximate aggregates: their answers agree within a tolerance only.
APPROXIMATE = re.compile(r"\b(approx_count_distinct|approx_quantile|reservoir_quantile|approx_top_k)\s*\(", re.I)
TYPE_GROUPS = {
    "<signed>": ["tinyint", "smallint", "integer", "bigint", "hugeint"],
    "<unsigned>": ["utinyint", "usmallint", "uinteger", "ubigint", "uhugeint"],
}
TYPE_GROUPS["<integral>"] = TYPE_GROUPS["<signed>"] + TYPE_GROUPS["<unsigned>"]
TYPE_GROUPS["<numeric>"] = TYPE_GROUPS["<integral>"] + ["float", "double"]


# ------------------------------------------------------------------ the sqllogictest format

@dataclass
class Record:
    """One runnable record of a test file: a statement or a query."""

    kind: str  # "statement" or "query"
    line: int
    sql: str
    expect_error: bool = False  # statement error
    types: str = ""  # query's column types ("IIR")
    sort: str = "nosort"  # nosort / rowsort / valuesort


@dataclass
class TestFile:
    """A parsed file: its records, or why the whole file is skipped."""

    records: list[Record] = field(default_factory=list)
    skip: str | None = None
    notes: list[str] = field(default_factory=list)


def _blocks(lines: list[str]):
    """(first line number, lines) of each blank-line separated block."""
    block, start = [], 0
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip("\n").rstrip("\r")
        if line.strip() == "":
            if block:
                yield start, block
            block = []
            continue
        if not block:
            start = i
        block.append(line)
    if block:
        yield start, block


def _expand_loops(lines: list[tuple[int, str]], depth=0) -> list[tuple[int, str]]:
    """Unrolls loop / foreach / concurrentloop ... endloop (with ${var} substituted)."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        no, line = lines[i]
        words = line.split()
        if words and words[0] in ("loop", "foreach", "concurrentloop", "concurrentforeach"):
            level, j = 1, i + 1
            while j < len(lines):
                w = lines[j][1].split()
                if w and w[0] in ("loop", "foreach", "concurrentloop", "concurrentforeach"):
                    level += 1
                elif w and w[0] == "endloop":
                    level -= 1
                    if level == 0:
                        break
                j += 1
            body = lines[i + 1:j]
            var = words[1]
            if words[0].endswith("loop"):
                values = [str(v) for v in range(int(words[2]), int(words[3]))]
            else:
                values = []
                for w in words[2:]:
                    if w.startswith("<"):
                        if w not in TYPE_GROUPS:
                            raise ValueError(f"foreach over {w}")
                        values += TYPE_GROUPS[w]
                    else:
                        values.append(w)
            if len(values) > MAX_LOOP_ITERATIONS:
                raise ValueError(f"a loop of {len(values)} iterations")
            for v in values:
                sub = [(n, s.replace("${" + var + "}", v)) for n, s in body]
                out += _expand_loops(sub, depth + 1)
            i = j + 1
            continue
        out.append((no, line))
        i += 1
    return out


def parse_test(text: str) -> TestFile:
    """The records of a sqllogictest text (DuckDB's dialect), skipif / onlyif / mode skip
    applied, loops unrolled; ``skip`` says why a whole file cannot run (an extension it
    requires, a loop too long to unroll)."""
    tf = TestFile()
    numbered = list(enumerate(text.splitlines(), 1))
    try:
        numbered = _expand_loops(numbered)
    except (ValueError, IndexError) as e:
        tf.skip = f"loop not unrolled: {e}"
        return tf
    # blocks separated by blank lines, keeping original line numbers
    blocks: list[tuple[int, list[str]]] = []
    cur: list[tuple[int, str]] = []
    for no, line in numbered + [(0, "")]:
        if line.strip() == "":
            if cur:
                blocks.append((cur[0][0], [s for _, s in cur]))
            cur = []
        else:
            cur.append((no, line))
    skipping = False
    for start, block in blocks:
        # drop comment lines at the top of a block
        while block and block[0].lstrip().startswith("#"):
            block = block[1:]
            start += 1
        if not block:
            continue
        skip_this = False
        while block and block[0].split()[0] in ("skipif", "onlyif"):
            w = block[0].split()
            if (w[0] == "skipif" and w[1] == "duckdb") or (w[0] == "onlyif" and w[1] != "duckdb"):
                skip_this = True
            block = block[1:]
            start += 1
        if not block:
            continue
        head = block[0].split()
        cmd = head[0]
        if cmd == "halt":
            tf.notes.append("halt")
            if not skip_this:
                break
            continue
        if cmd == "mode":
            if head[1] == "skip":
                skipping = True
            elif head[1] == "unskip":
                skipping = False
            continue
        if cmd == "require":
            what = head[1] if len(head) > 1 else ""
            if what == "vector_size":
                if int(head[2]) > 2048:
                    tf.skip = f"require vector_size {head[2]}"
                    return tf
                continue
            if what not in RUN_PROPERTIES:
                tf.skip = f"require {what}"
                return tf
            continue
        if cmd in ("load", "restart", "reconnect", "sleep", "unzip", "set", "reset", "test-env",
                   "require-env", "tags", "concurrentloop", "endloop", "continue", "template", "cache_file"):
            if cmd in ("require-env",):
                tf.skip = f"require-env {' '.join(head[1:])}"
                return tf
            continue
        if cmd == "statement":
            sql_lines, rest = _split_result(block[1:])
            rec = Record("statement", start, "\n".join(sql_lines), expect_error=head[1] == "error" if len(head) > 1 else False)
        elif cmd == "query":
            sql_lines, rest = _split_result(block[1:])
            sort = "nosort"
            for w in head[2:]:
                if w in ("rowsort", "valuesort", "nosort"):
                    sort = w
            rec = Record("query", start, "\n".join(sql_lines), types=head[1] if len(head) > 1 else "", sort=sort)
        else:
            continue  # unknown commands (e.g. "endloop" of a skipped loop, custom runners)
        if skipping or skip_this:
            continue
        tf.records.append(rec)
    return tf


def _split_result(lines: list[str]) -> tuple[list[str], list[str]]:
    for i, line in enumerate(lines):
        if line.strip() == "----":
            return lines[:i], lines[i + 1:]
    return lines, []


# ------------------------------------------------------------------ comparing answers

def _close(a, b, rel: float) -> bool:
    from sluice.testing.oracle import values_equal
    if rel >= 0.01 and isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):  # an approximate aggregate's count
        return math.isclose(float(a), float(b), rel_tol=rel)
    if isinstance(a, float) or isinstance(b, float):
        try:
            fa, fb = float(a), float(b)
        except (TypeError, ValueError):
            return False
        if math.isnan(fa) or math.isnan(fb) or math.isinf(fa) or math.isinf(fb):
            return str(fa) == str(fb)
        return math.isclose(fa, fb, rel_tol=rel, abs_tol=rel)
    return values_equal(a, b)


def compare_answers(ours, theirs, sort: str, ordered: bool, rel: float) -> str | None:
    """None when the answers agree, else a short description of the first difference."""
    from sluice.testing.oracle import _key, rows_of
    if ours.num_columns != theirs.num_columns:
        return f"column count {ours.num_columns} != duckdb's {theirs.num_columns}"
    if ours.num_rows != theirs.num_rows:
        return f"row count {ours.num_rows} != duckdb's {theirs.num_rows}"
    a, b = rows_of(ours), rows_of(theirs)
    if sort == "valuesort":
        a = [(v,) for r in a for v in r]
        b = [(v,) for r in b for v in r]
    if sort != "nosort" or not ordered:
        a, b = sorted(a, key=_key), sorted(b, key=_key)
    for i, (ra, rb) in enumerate(zip(a, b)):
        for c, (x, y) in enumerate(zip(ra, rb)):
            if not _close(x, y, rel):
                return f"row {i}, column {c}: {x!r} != duckdb's {y!r}"
    return None


def _ordered(sql: str) -> bool:
    """Whether the query's outermost SELECT has an ORDER BY (after the last closing paren)."""
    s = re.sub(r"'(?:[^']|'')*'", "''", sql.lower())
    tail = s[s.rfind(")") + 1:] if ")" in s else s
    return "order by" in tail


# ------------------------------------------------------------------ running one file

class QueryTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise QueryTimeout()


def _classify_sluice_error(e: BaseException) -> tuple[str, str]:
    from sluice import errors
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    if isinstance(e, QueryTimeout) or "QueryTimeout" in msg:  # (an operator wraps it as InternalError)
        return "timeout", "timeout"
    if isinstance(e, errors.UnsupportedError):
        return "refused", msg
    if isinstance(e, errors.InternalError) or not isinstance(e, errors.SluiceError):
        return "internal", f"{type(e).__name__}: {msg}"
    return "user_error", msg


def _duck_arrow(con, sql: str):
    return con.sql(sql).to_arrow_table()


def _export(con, folder: Path) -> dict[str, str]:
    """Writes every main-schema table and view as NAME.parquet; returns {lower name: why} of those it cannot write."""
    failed: dict[str, str] = {}
    names = [r[0] for r in con.execute(
        "select table_name from duckdb_tables() where schema_name = 'main' and database_name in (current_database(), 'temp') "
        "union all select view_name from duckdb_views() where not internal and schema_name = 'main' "
        "and database_name in (current_database(), 'temp')").fetchall()]
    lowered = Counter(n.lower() for n in names)
    for t, ty in con.execute("select table_name, data_type from duckdb_columns() where not internal and schema_name = 'main' "
                             "and database_name in (current_database(), 'temp')").fetchall():
        if UNFAITHFUL_TYPES.search(ty):
            failed[t.lower()] = f"type {ty} (Parquet holds another type)"
    for n in names:
        if n.lower() in failed:
            continue
        if lowered[n.lower()] > 1 or "/" in n or n.startswith("."):
            failed[n.lower()] = "name"
            continue
        path = folder / f"{n}.parquet"
        try:
            q = n.replace('"', '""')
            con.execute(f"COPY (SELECT * FROM \"{q}\") TO '{path}' (FORMAT parquet)")
        except Exception as e:  # noqa: BLE001 -- any DuckDB error: the table is not exported
            failed[n.lower()] = str(e).splitlines()[0][:80]
            path.unlink(missing_ok=True)
    # schemas other than main: their tables cannot be named in a folder of files
    for (s, t) in con.execute("select schema_name, table_name from duckdb_tables() where schema_name <> 'main' "
                              "union all select schema_name, view_name from duckdb_views() where not internal "
                              "and schema_name <> 'main'").fetchall():
        failed[t.lower()] = f"schema {s}"
        failed[s.lower()] = f"schema {s}"
    return failed


def run_file(path: Path, rel_name: str) -> dict:
    """Runs one test file; returns {"results": [(line, class, detail, query, ours, theirs)], "skip": why}."""
    import duckdb

    import sluice
    tf = parse_test(path.read_text(errors="replace"))
    out = {"file": rel_name, "results": [], "skip": tf.skip}
    if tf.skip or not any(r.kind == "query" for r in tf.records):
        return out
    work = Path(tempfile.mkdtemp(prefix="sqltests-"))
    test_dir = work / "testdir"
    test_dir.mkdir()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET threads = 1")
    state, exported, failed, scon, setting = 0, -1, {}, None, None
    signal.signal(signal.SIGALRM, _alarm)
    started = time.time()
    try:
        for rec in tf.records:
            sql = rec.sql.replace("__TEST_DIR__", str(test_dir)).strip().rstrip(";").strip()
            if rec.kind == "statement":
                state += 1
                first = sql.lstrip("(").split(None, 1)[0].lower() if sql else ""
                if first in ("set", "pragma", "reset") and not HARMLESS_SETTINGS.match(sql):
                    setting = sql.splitlines()[0][:60]
                elif re.search(r"\bcollat(e|ion)\b", sql, re.I):
                    setting = "a collation"
                try:
                    res = con.execute(sql)
                    if res is not None and res.description is not None:
                        res.fetchall()  # (an unfinished result blocks the connection's next statement)
                except Exception:  # noqa: BLE001 -- statement error (expected or not): DuckDB's state is what counts
                    pass
                continue
            words = set(re.findall(r"[a-z_][a-z0-9_]*", sql.lower()))
            res = [rec.line, None, "", sql, None, None]
            # DuckDB first, always: a query may change its state (WITH ... INSERT, RETURNING, CALL)
            try:
                theirs = _duck_arrow(con, sql)
                duck_err = None
            except Exception as e:  # noqa: BLE001 -- DuckDB rejects the query
                theirs, duck_err = None, str(e).splitlines()[0][:200]
            if CHANGES_STATE.search(sql):
                state += 1
            first = sql.lstrip("(").split(None, 1)[0].lower() if sql else ""
            skip = None
            if time.time() - started > FILE_BUDGET_S:
                skip = f"the file's {FILE_BUDGET_S} s were spent"
            elif setting is not None:
                skip = f"session setting: {setting}"
            elif first in NOT_SELECT or CHANGES_STATE.search(sql):
                skip = f"not a SELECT ({first.upper()})"
            elif NONDETERMINISTIC.search(sql):
                skip = "nondeterministic function"
            if skip is not None:
                res[1:3] = "skipped", skip
                out["results"].append(res)
                continue
            if exported != state:
                folder = work / f"state{state}"
                folder.mkdir()
                try:
                    failed = _export(con, folder)
                except Exception as e:  # noqa: BLE001 -- e.g. DuckDB's transaction aborted by a failed statement
                    failed = {w: f"export failed: {str(e).splitlines()[0][:60]}" for w in words}
                if scon is not None:
                    scon.close()
                scon = sluice.connect(str(folder), device="cpu", threads=1)
                exported = state
            bad = sorted(words & set(failed))
            if bad:
                res[1:3] = "skipped", f"table not exported: {bad[0]} ({failed[bad[0]]})"
                out["results"].append(res)
                continue
            signal.alarm(QUERY_TIMEOUT_S)
            try:
                ours = scon.sql(sql).to_arrow()
                our_err = None
            except BaseException as e:  # noqa: BLE001 -- classified below
                if isinstance(e, KeyboardInterrupt):
                    raise
                ours, our_err = None, _classify_sluice_error(e)
            finally:
                signal.alarm(0)
            if our_err is not None and our_err[0] == "timeout":
                res[1:3] = "timeout", f"over {QUERY_TIMEOUT_S} s"
                # the connection may be mid-query: a fresh one for the next
                scon = sluice.connect(str(work / f"state{exported}"), device="cpu", threads=1)
            elif duck_err is not None and our_err is not None:
                res[1:3] = "both_error", our_err[1][:200]
            elif duck_err is not None:
                res[1:3] = "duck_error", duck_err
                res[4] = _show(ours)
            elif our_err is not None:
                cls, msg = our_err
                res[1:3] = ("sluice_error" if cls == "user_error" else cls), msg[:300]
                res[5] = _show(theirs)
            else:
                rel = 0.1 if APPROXIMATE.search(sql) else 1e-6 if "R" in rec.types else 1e-9
                try:
                    diff = compare_answers(ours, theirs, rec.sort, _ordered(sql), rel)
                except Exception as e:  # noqa: BLE001 -- answers the oracle cannot read back
                    diff = f"compare failed: {type(e).__name__}: {str(e)[:100]}"
                if diff is None:
                    res[1] = "pass"
                else:
                    res[1:3] = "wrong", diff[:300]
                    res[4], res[5] = _show(ours), _show(theirs)
            out["results"].append(res)
    finally:
        if scon is not None:
            scon.close()
        con.close()
        shutil.rmtree(work, ignore_errors=True)
    return out


def _show(t, rows: int = 8) -> str | None:
    if t is None:
        return None
    try:
        from sluice.testing.oracle import rows_of
        r = rows_of(t)
        s = "; ".join(repr(x) for x in r[:rows])
        return s + (f" ... ({len(r)} rows)" if len(r) > rows else "")
    except Exception as e:  # noqa: BLE001
        return f"<unprintable: {e}>"


# ------------------------------------------------------------------ the driver

def sqltest_files(root: Path, only: str | None) -> list[tuple[Path, str]]:
    files = []  # SQLite's select files first: the longest start first
    for name in SQLITE:
        p = root / "test" / "sqlite" / name
        if p.exists():
            files.append((p, f"sqlite/{name}"))
    for f in FOLDERS:
        for p in sorted((root / "test" / "sql" / f).rglob("*.test*")):
            files.append((p, str(p.relative_to(root / "test" / "sql"))))
    if only:
        files = [x for x in files if only in x[1]]
    return files


def folder_of(rel: str) -> str:
    parts = rel.split("/")
    if parts[0] in ("function", "types"):
        return "/".join(parts[:2])
    if parts[0] == "sqlite":
        return rel
    return parts[0]


def run_all(files: list[tuple[Path, str]], jobs: int) -> list[dict]:
    """Each file in a forked child (sluice and torch imported once, here); at most ``jobs`` at a time."""
    import sluice  # noqa: F401 -- imported before forking
    import sluice.engine  # noqa: F401
    results: list[dict] = []
    pending = list(files)
    running: dict[int, tuple[str, str, float]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="sqltests-out-"))
    n = 0
    while pending or running:
        while pending and len(running) < jobs:
            p, rel = pending.pop(0)
            n += 1
            res_path = tmp / f"{n}.json"
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    r = run_file(p, rel)
                except BaseException as e:  # noqa: BLE001 -- the harness's own failure on this file
                    r = {"file": rel, "results": [], "skip": f"harness error: {type(e).__name__}: {str(e)[:100]}"}
                    code = 1
                res_path.write_text(json.dumps(r, default=str))
                os._exit(code)
            running[pid] = (rel, str(res_path), time.time())
        done = False
        for pid, (rel, rp, t0) in list(running.items()):
            got, status = os.waitpid(pid, os.WNOHANG)
            if got:
                running.pop(pid)
                try:
                    results.append(json.loads(Path(rp).read_text()))
                except (OSError, ValueError):
                    results.append({"file": rel, "results": [], "skip": f"worker died (status {status})"})
                done = True
                print(f"[{len(results)}/{len(files)}] {rel}", file=sys.stderr, flush=True)
            elif time.time() - t0 > FILE_TIMEOUT_S:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                running.pop(pid)
                results.append({"file": rel, "results": [], "skip": f"file over {FILE_TIMEOUT_S} s (killed)"})
        if not done:
            time.sleep(0.05)
    shutil.rmtree(tmp, ignore_errors=True)
    return results


CLASSES = ["pass", "wrong", "internal", "refused", "sluice_error", "duck_error", "both_error", "timeout", "skipped"]


def _reason(msg: str) -> str:
    """A refusal message with its literals and numbers blanked, to count reasons."""
    m = re.sub(r"'[^']*'", "'…'", msg)
    m = re.sub(r"\b\d+\b", "N", m)
    return m[:110]


def _revision() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1]).stdout.strip()


def report(results: list[dict], elapsed: float, jobs: int, root: Path, here: str) -> str:
    by_folder: dict[str, Counter] = defaultdict(Counter)
    refusals, user_errors, duck_errors, skips = Counter(), Counter(), Counter(), Counter()
    cases = defaultdict(list)
    skipped_files = []
    for r in sorted(results, key=lambda r: r["file"]):
        if r.get("skip"):
            skipped_files.append((r["file"], r["skip"]))
        for line, cls, detail, sql, ours, theirs in r["results"]:
            by_folder[folder_of(r["file"])][cls] += 1
            where = f"{r['file']}:{line}"
            if cls == "refused":
                refusals[_reason(detail)] += 1
            elif cls == "sluice_error":
                user_errors[_reason(detail)] += 1
            elif cls == "duck_error":
                duck_errors[_reason(detail)] += 1
            elif cls == "skipped":
                skips[_reason(detail)] += 1
            if cls in ("wrong", "internal", "timeout", "duck_error", "sluice_error"):
                cases[cls].append((where, sql, detail, ours, theirs))
    total = Counter()
    for c in by_folder.values():
        total.update(c)
    import duckdb
    rev = subprocess.run(["git", "-C", MIRROR, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    ran = sum(total[c] for c in CLASSES if c != "skipped")
    duck_answers = sum(total[c] for c in ("pass", "wrong", "internal", "refused", "sluice_error", "timeout"))
    answered = total["pass"] + total["wrong"]
    lines = [f"# DuckDB's SQL tests through sluice -- {dt.date.today().isoformat()}", "",
             f"Machine: 2-core VM (CPU only, shared with other jobs), `-j {jobs}`, {elapsed / 60:.1f} min wall. "
             f"sluice {here}, DuckDB {duckdb.__version__} as the oracle, tests from the DuckDB mirror at {rev} ({root}).", "",
             "Command: `python bench/duckdb_sqltests.py -j 2` (see the module docstring).", "",
             f"**{ran} queries run: {total['pass']} pass, {total['wrong']} wrong, {total['internal']} internal, "
             f"{total['refused']} refused, {total['sluice_error']} sluice errors where DuckDB answers, "
             f"{total['duck_error']} answered where DuckDB errs, {total['both_error']} both error, "
             f"{total['timeout']} timeouts. Of the {duck_answers} queries DuckDB answers, sluice answers "
             f"{answered / max(duck_answers, 1):.1%}** ({total['skipped']} skipped, {len(skipped_files)} files skipped whole).", "",
             "| folder | " + " | ".join(CLASSES) + " |", "|---" * (len(CLASSES) + 1) + "|"]
    for f in sorted(by_folder):
        lines.append(f"| {f} | " + " | ".join(str(by_folder[f][c]) for c in CLASSES) + " |")
    lines.append("| **all** | " + " | ".join(f"**{total[c]}**" for c in CLASSES) + " |")

    def top(title, counter, k=40):
        lines.extend(["", f"## {title}", ""])
        for reason, n in counter.most_common(k):
            lines.append(f"- {n} x `{reason}`")

    top("Top refusal reasons", refusals)
    top("Top sluice errors where DuckDB answers", user_errors, 30)
    top("Top DuckDB errors where sluice answers", duck_errors, 20)
    top("Skipped queries, by reason", skips, 15)
    for cls in ("wrong", "internal", "timeout", "duck_error"):
        lines.extend(["", f"## Every {cls} case ({len(cases[cls])})", ""])
        for where, sql, detail, ours, theirs in cases[cls]:
            q = " ".join(sql.split())
            lines.append(f"- `{where}`: `{q[:400]}`")
            lines.append(f"  - {detail}")
            if ours is not None:
                lines.append(f"  - sluice: {ours[:300]}")
            if theirs is not None:
                lines.append(f"  - duckdb: {theirs[:300]}")
    lines.extend(["", "## Files skipped whole", ""])
    why = Counter(re.sub(r"\d+", "N", s) for _, s in skipped_files)
    for s, n in why.most_common():
        lines.append(f"- {n} x {s}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    global FILE_BUDGET_S, FILE_TIMEOUT_S
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tests", nargs="?", default=DEFAULT_DIR, help="folder holding test/sql and test/sqlite")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--only", help="run only files whose path contains this")
    ap.add_argument("--out", help="report path (default bench/results/DATE-duckdb-sqltests-2core-cpu.md)")
    ap.add_argument("--json", help="also write the raw per-query results here")
    ap.add_argument("--file-budget", type=float, default=FILE_BUDGET_S,
                    help=f"seconds a file's queries may take; the rest are skipped (default {FILE_BUDGET_S})")
    args = ap.parse_args(argv)
    root = Path(args.tests)
    if not (root / "test" / "sql").is_dir():
        if args.tests != DEFAULT_DIR:
            print(f"error: {root} has no test/sql folder", file=sys.stderr)
            return 1
        root.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", MIRROR, "archive", "HEAD", "test/sql", "test/sqlite"], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(root)], stdin=archive.stdout, check=True)
        archive.wait()
    FILE_BUDGET_S, FILE_TIMEOUT_S = args.file_budget, args.file_budget + 60
    files = sqltest_files(root, args.only)
    t0, here = time.time(), _revision()
    results = run_all(files, args.jobs)
    elapsed = time.time() - t0
    if args.json:
        Path(args.json).write_text(json.dumps(results, default=str))
    text = report(results, elapsed, args.jobs, root, here)
    out = Path(args.out) if args.out else (Path(__file__).resolve().parent / "results" /
                                           f"{dt.date.today().isoformat()}-duckdb-sqltests-2core-cpu.md")
    out.write_text(text)
    print(text.split("\n## ")[0])
    print(f"report: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
