"""Differential SQL fuzzing: random queries over two small tables with NULLs, NaN, infinities,
empty strings and several row groups, run by sluice (each under a random one of several
settings: default, tiny chunks, forced spilling, staging and pushdown scans, the device decoder (Triton page kernels),
the decoded-column cache kept across queries, over tables written per seed as dictionary, plain or delta pages) and by DuckDB;
prints every query whose answers differ, that sluice fails on while DuckDB answers, or that
sluice answers while DuckDB raises an overflow (``ANSWERED``: DuckDB's overflow errors are
sluice's too; ``narrow_query`` writes arithmetic of narrow integers at their ends with small
integer literals, which DuckDB types as the column's type where they fit).

    python bench/fuzz_sql.py SEED [QUERIES] [-v]     # -v: also DuckDB's own rejections
    python bench/fuzz_sql.py SEED [QUERIES] --ranks 3  # also every query on 2..3 local ranks

``--ranks N`` runs the queries DuckDB answered again on 2..N local ranks (one job per batch of
queries, each under a random exchange, join placement, chunk size or forced spilling); this is
how the final aggregation phase that left two rows of an empty global aggregate (one per
rank's partial state, spilled) was found.

This found, on its first runs, NaN ordering, window float sums, a NULL sort-key tie and
CASE branches that raised for rows they did not decide. ``query4`` generates the edges a
peer engine's own tests found wrong: every numeric type (REAL, int8/16, unsigned, decimals),
mixed-type set operations and VALUES, casts at the limits, repeated and positional names,
correlated subqueries over empty groups, STRFTIME formats, recursive CTEs, unicode text,
dates before year 1 and past 9999, empty tables, non-equi joins under a 4 MiB budget.
``quantile_query`` (one query in twenty, from its own RNG) takes MEDIAN / QUANTILE / MAD of
doubles, REALs and decimals at their ends (it found MAD of -1e308 and 1e308 NaN, DuckDB 1e308).
``asof_query`` (one query in about sixteen, from its own RNG) writes ASOF joins of t and u:
every inequality and join kind, USING, keys of every type (IS NOT DISTINCT FROM too), one
side's conditions in the ON, values of mixed types, NULLs, NaN and ties (it shows only what DuckDB's pick among tied right rows cannot change).
``sparse_topk_query`` (one in about sixteen, its own RNG) orders table sp by a key NULL in almost every row
under a LIMIT (the top-k cut once dropped the NULL rows that fill the limit: 5 rows answered to LIMIT 60).
``text_cast_query`` (one query in twenty, its own RNG) casts random texts of lists, structs and maps
(quotes, escapes, blanks, brackets, a character changed) and ev's nested columns as text to nested types.
``row_subquery_query`` (one query in about 33, its own RNG) compares row values ``(a, b)`` with
subqueries: IN / NOT IN and every op with ANY / ALL, NULL fields on either side, NULL rows, empty
and row-valued subqueries, in the select list, WHERE and under NOT (the per-field NULL rules of a
mark join); ``right_using_query`` writes RIGHT / FULL JOIN ... USING and NATURAL (the merged column).
``sqltests_query`` draws the forms DuckDB's own tests found wrong or missing
(``bench/duckdb_sqltests.py``): FROM range / generate_series, ``agg(x) EXPORT_STATE`` printed, cast, kept in a CTE,
merged by COMBINE and COMBINE_AGGR and finalized (a CAST of a state once showed sluice's own STRUCT), HISTOGRAM(x, bins),
printf's ``%.d`` (DuckDB's thousands separator), NULL options of the path functions and
their exact option names (a lower-cased ``'FORWARD_SLASH'`` was a wrong answer), TRY over rows that fail.
``pair_on_query`` (its own RNG) joins t and u LEFT / RIGHT / FULL / SEMI / ANTI on EXISTS, IN, NOT IN,
scalar subqueries and OR reading both sides (``sluice/sql/outer_on.py``'s row-id plan); correlated IN as a
value (in the select list, under OR), and subqueries in an aggregate's FILTER and arguments.
``keyed_recursive_query`` (its own RNG) writes WITH RECURSIVE ... USING KEY: MIN distances over a
join (UNION), aggregates over UNION ALL, last values of floats until they stop changing (NaN,
-0.0, NULL), ``recurring.r``.
``timestamp_average_query`` (its own RNG) averages timestamps far from today (exact sums, DuckDB's
rounding) and names a select-list alias in HAVING.
``cut_query`` (one query in twenty, its own RNG) aims at what decides early which rows cannot matter
(top-k candidates and filters, MIN / MAX bounds, row-group pruning, join runtime filters, DISTINCT ...
LIMIT) over ``ct`` / ``cf``: 2,400 rows, enough to switch them on, with a row group of only NULLs, one of
one value, NaN / -0.0 groups, files without statistics, constants at the statistics' edges ('nan' against
a float was an internal error) and sums past 64 bits ordered or grouped by (computed as zeros: wrong).
``bool_agg_query`` (its own RNG) aggregates booleans: where DuckDB does not bind the aggregate (AVG, PRODUCT,
the moments of a BOOLEAN), sluice must reject it too -- it once answered AVG of booleans with TRUE as 1.
Internal errors (a Python exception, or sluice's InternalError) are counted apart. Queries DuckDB rejects are skipped;
refusals (``unsupported: ...``) are listed, not counted. Not a test: answers from DuckDB
that depend on row order (ROWS frames over ties) are kept out by the generator's ordering.
"""
# ruff: noqa: E701, E702, E731
import datetime as dt
import decimal
import random
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import os  # noqa: E402

import torch  # noqa: E402

if not torch.cuda.is_available():  # decoder=device: the page kernels in Triton's interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")

import sluice  # noqa: E402
from sluice.kernels import checks  # noqa: E402
from sluice.expr import evaluate as selective  # noqa: E402
from sluice.exec import string_prefix  # noqa: E402
from sluice.io.parquet import reader as reader_mod  # noqa: E402
from sluice.exec import runtime_filter  # noqa: E402

SELECTIVE_ROWS = selective.SELECTIVE_MIN_ROWS
MERGE_ROWS = reader_mod.MERGE_ROWS_PER_ENTRY
FLUSH_BYTES = runtime_filter.DEFER_FLUSH_BYTES

FIRST_BYTE = {n: getattr(string_prefix, n) for n in ("FIRST_BYTE_MIN_ROWS", "FIRST_BYTE_ROWS_PER_GROUP",
                                                  "FIRST_BYTE_MAX_GROUPS", "FIRST_BYTE_MIN_ENTRIES_PER_ROW")}
FIRST_BYTE_FORCED = {n: (1 << 30 if n == "FIRST_BYTE_MAX_GROUPS" else 0) for n in FIRST_BYTE}
from sluice.testing.oracle import compare, duckdb_tables  # noqa: E402

if {"-h", "--help"} & set(sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
RANKS = int(sys.argv[sys.argv.index("--ranks") + 1]) if "--ranks" in sys.argv else 1
ARGS = [a for i, a in enumerate(sys.argv) if a != "--ranks" and (i == 0 or sys.argv[i - 1] != "--ranks")]
R = random.Random(int(ARGS[1]) if len(ARGS) > 1 else 0)
N = int(ARGS[2]) if len(ARGS) > 2 else 300
root = Path(tempfile.mkdtemp(prefix="sluice-fuzz-"))
def mk(n, seed):
    r = random.Random(seed)
    return pa.table({
        # the last 15 rows NULL: t's last row group (its last read task) is pages of only NULLs
        "a": pa.array([None if r.random()<.15 or i >= n - 15 else r.randint(-5, 12) for i in range(n)], pa.int32()),
        "b": pa.array([r.randint(-1000, 100000) for _ in range(n)], pa.int64()),
        "d": pa.array([None if r.random()<.15 else decimal.Decimal(r.randint(-99999, 99999))/100 for _ in range(n)], pa.decimal128(12, 2)),
        "s": pa.array([None if r.random()<.15 else r.choice(["apple","Banana","cherry","date","", "elder berry","fig%","a_b","a\\x{b}"]) for _ in range(n)], pa.string()),
        "dt": pa.array([None if r.random()<.1 else dt.date(1995,1,1)+dt.timedelta(days=r.randint(0,3000)) for _ in range(n)], pa.date32()),
        "f": pa.array([None if r.random()<.15 else r.choice([0.0,-0.0,1.5,float("nan"),float("inf"),r.uniform(-100,100),r.uniform(-100,100)]) for _ in range(n)], pa.float64()),
        "g": pa.array([r.randint(0, 4) for _ in range(n)], pa.int16()),
    })
# t and u in one encoding scheme per seed (its own RNG: a seed's queries stay as they were), in
# tiny pages (short last pages, some all NULL): what the torch decoder (``decoder=device``
# below) meets in the wild. A delta page of only NULLs last in a read task once crashed it.
SCHEME = random.Random(10_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0)).choice(["dictionary", "plain", "delta"])
def encoded(table):
    if SCHEME == "dictionary": return dict(use_dictionary=True)
    if SCHEME == "plain": return dict(use_dictionary=False)
    enc = {f.name: ("DELTA_BYTE_ARRAY" if pa.types.is_string(f.type) else "DELTA_BINARY_PACKED")
           for f in table.schema if pa.types.is_integer(f.type) or pa.types.is_date(f.type) or pa.types.is_string(f.type)}
    return dict(use_dictionary=False, column_encoding=enc)
# Decimals as pyarrow's FIXED_LEN_BYTE_ARRAY or, for half the seeds, as INT32/INT64 (as DuckDB and
# Spark write them): those are decoded as integers under a rewritten footer (integer_decimals).
INT_DECIMALS = random.Random(20_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0)).random() < 0.5
pq.write_table(mk(200, 1), root/"t.parquet", row_group_size=37, data_page_size=64, **encoded(mk(0, 1)),
               store_decimal_as_integer=INT_DECIMALS)
pq.write_table(mk(60, 2), root/"u.parquet", row_group_size=20, data_page_size=64, **encoded(mk(0, 2)),
               store_decimal_as_integer=INT_DECIMALS)
pq.write_table(mk(0, 3), root/"e.parquet")  # empty, u's columns
def mk_numbers(n, seed):  # every numeric type, their limits among the values
    r = random.Random(seed)
    def pick(lo, hi, extra=()):
        return [None if r.random() < .12 else r.choice(list(extra) + [r.randint(lo, hi)] * 4) for _ in range(n)]
    return pa.table({
        "k": pa.array([r.randint(0, 3) for _ in range(n)], pa.int32()), "o": pa.array(range(n), pa.int64()),
        "i8": pa.array(pick(-9, 9, (127, -128, 0)), pa.int8()), "i16": pa.array(pick(-300, 300, (32767, -32768)), pa.int16()),
        "i64": pa.array(pick(-10**6, 10**6, (2**62, -2**62)), pa.int64()), "u8": pa.array(pick(0, 20, (255,)), pa.uint8()),
        "r": pa.array([None if r.random() < .12 else r.choice([0.5, -1.25, 3.0e9, float("nan"), r.uniform(-50, 50)]) for _ in range(n)], pa.float32()),
        "d2": pa.array([None if r.random() < .12 else decimal.Decimal(r.randint(-9999, 9999)) / 100 for _ in range(n)], pa.decimal128(4, 2)),
        "d6": pa.array([None if r.random() < .12 else decimal.Decimal(r.randint(-10**12, 10**12)) / 10**6 for _ in range(n)], pa.decimal128(18, 6)),
    })
# n is a folder of two files; for a quarter of the seeds the second stores d2 at another scale
# (the same values): a table whose files disagree on a type must be refused, never read as the
# first file's type (a decimal's scale once read 10x off, its statistics too).
NUMBERS = mk_numbers(120, 4)
(root/"n").mkdir(exist_ok=True)
pq.write_table(NUMBERS.slice(0, 60), root/"n"/"a.parquet", row_group_size=25, store_decimal_as_integer=INT_DECIMALS)
SECOND = NUMBERS.slice(60)
if random.Random(30_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0)).random() < 0.25:
    SECOND = SECOND.set_column(SECOND.schema.get_field_index("d2"), "d2", SECOND.column("d2").cast(pa.decimal128(6, 3)))
pq.write_table(SECOND, root/"n"/"b.parquet", row_group_size=25, store_decimal_as_integer=INT_DECIMALS)
WORDS = ["S\u0308a\ufe0d", "abc", "\U0001F468\u200d\U0001F469\u200d\U0001F467x", "\u00fcber", "Stra\u00dfe", "", "\u65e5\u672c\u8a9e",
         "e\u0301e\u0301", "\U0001F1FA\U0001F1F8", "na\u00efve caf\u00e9", "ABC", None]
pq.write_table(pa.table({"i": pa.array(range(40)), "w": pa.array([WORDS[j % len(WORDS)] for j in range(40)])}), root/"w.parquet", row_group_size=9)
# Keys at the very ends of int64 and a dimension near each end: a join's runtime filter over
# [lo, hi] then holds lo - 1 or hi + 1, which int64 cannot (an exact bitmap's padding once
# overflowed there: an internal error).
_I64 = (-(2 ** 63), 2 ** 63 - 1)
_XR = random.Random(40_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
pq.write_table(pa.table({"v": pa.array([_XR.choice([_I64[0], _I64[0] + 1, _I64[0] + 3, _I64[1], _I64[1] - 1, _I64[1] - 3, 0, None])
                                        for _ in range(300)], pa.int64())}), root/"xk.parquet", row_group_size=40)
# A table whose sort keys are NULL in almost every row (sparse_topk_query): ORDER BY x LIMIT k
# cuts each chunk to its candidates, and with fewer than k values there the NULL rows must stay
# (NULLS LAST too); the cut once dropped them (5 rows answered to LIMIT 10).
_TKR = random.Random(185_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
_SPN = 1200
_SPHAS = set(_TKR.sample(range(_SPN), _TKR.randint(0, 12)))
pq.write_table(pa.table({"id": pa.array(range(_SPN), pa.int64()),
                         "x": pa.array([_TKR.randint(-5, 5) if i in _SPHAS else None for i in range(_SPN)], pa.int64()),
                         "s": pa.array([_TKR.choice(["", "a", "abcdefghij", "abcdefghik", "zz"]) if i in _SPHAS else None
                                        for i in range(_SPN)], pa.string()),
                         "f": pa.array([_TKR.choice([-0.0, 0.0, 1.5, float("nan"), -1e300]) if i in _SPHAS else None
                                        for i in range(_SPN)], pa.float64()),
                         "g": pa.array([i % 4 for i in range(_SPN)], pa.int32())}),
               root/"sp.parquet", row_group_size=_TKR.choice([100, 300, 1200]))
for _name, _end, _step in (("dmin", _I64[0], 1), ("dmax", _I64[1], -1)):
    pq.write_table(pa.table({"v": pa.array([_end, _end + 3 * _step], pa.int64()), "name": ["end", "near"]}), root/f"{_name}.parquet")
# Columns whose values sit where a constant of another type converts inexactly: 2**53 + 1 as a
# double, 0.1 and 2**24 + 1 as REAL, booleans against numbers. Sorted, in small row groups, so
# their statistics rule groups out (row-group pruning once compared the statistics exactly where
# the query compared converted values; a boolean once met a decimal's raw integer).
_BIG = 2 ** 53
_MC = sorted([_BIG - 1, _BIG, _BIG + 1, _BIG + 2, -_BIG - 1, 0, 1, 7] * 3)
pq.write_table(pa.table({"i": pa.array(_MC, pa.int64()),
                         "f": pa.array([float(v) for v in _MC], pa.float64()),
                         "r": pa.array([0.1, 0.1, 0.5, 16777216.0, 16777216.0, 16777218.0, -0.1, 1.0] * 3, pa.float32()),
                         "b": pa.array([True, False, None, True] * 6, pa.bool_()),
                         "d": pa.array([decimal.Decimal(v) / 10 for v in range(-12, 12)], pa.decimal128(4, 1)),
                         # decimals past 2**53 raw: converted to a double or a REAL they round once,
                         # correctly (...993.3 was ...992 here, DuckDB ...994)
                         "dl": pa.array([decimal.Decimal(v) + decimal.Decimal(k % 10) / 10 for k, v in enumerate(_MC)],
                                        pa.decimal128(18, 1))}),
               root/"mc.parquet", row_group_size=4)
MC_LITERALS = ["9007199254740993", "9007199254740993.0", "9007199254740993e0", "9007199254740992", "-9007199254740993",
               "0.1", "0.10", "cast(0.1 as real)", "16777217", "16777217.0", "1", "1.0", "0", "0.5", "-1.2", "7.0e0",
               "cast(16777217 as real)", "cast(9007199254740993 as double)"]

# Doubles and REALs at the ends of their range, decimals past 2**53, in small groups: MEDIAN,
# QUANTILE_CONT and MAD interpolate between neighbours (lo + d (hi - lo) overflowed: the MAD of
# -1e308 and 1e308 was NaN, DuckDB 1e308). Table xq and its queries come from their own RNG,
# drawn between the others (quantile_query): a seed's other queries stay as they were.
_QR = random.Random(60_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
_DMAX, _FMAX = 1.7976931348623157e308, 3.4028234663852886e38
def mk_extremes(n):
    r = _QR
    return pa.table({
        "k": pa.array([r.randint(0, 15) for _ in range(n)], pa.int32()),
        "x": pa.array([r.choice([-1e308, 1e308, _DMAX, -_DMAX, 0.0, -0.0, 5e-324, float("inf"), float("nan"), None,
                                 r.uniform(-1e300, 1e300), r.uniform(-10, 10)]) for _ in range(n)], pa.float64()),
        "r": pa.array([r.choice([-_FMAX, _FMAX, 3e38, -1e-45, float("-inf"), None, r.uniform(-1e30, 1e30), r.uniform(-10, 10)])
                       for _ in range(n)], pa.float32()),
        "m": pa.array([r.choice([None, decimal.Decimal(r.randint(-10**18 + 1, 10**18 - 1)) / 100,
                                 decimal.Decimal(r.randint(-999, 999)) / 100]) for _ in range(n)], pa.decimal128(18, 2)),
        "i": pa.array([r.choice([None, 2**63 - 1, -2**63, r.randint(-2**62, 2**62), r.randint(-9, 9)]) for _ in range(n)], pa.int64()),
    })
pq.write_table(mk_extremes(90), root/"xq.parquet", row_group_size=_QR.choice([8, 20, 90]))


def quantile_query():
    c = _QR.choice(["xq.x", "xq.r", "xq.m", "xq.i"])
    q = _QR.choice(["0.5", "0.1", "0.25", "0.3", "0.75", "0.9", "0", "1"])
    fs = ["mad({})", "median({})", f"quantile_cont({{}}, {q})", f"quantile_disc({{}}, {q})",
          f"percentile_cont({q}) within group (order by {{}})"]
    aggs = ", ".join(_QR.choice(fs).format(c) for _ in range(_QR.randint(1, 3)))
    where = f" where {c} {_QR.choice(['>', '<', '<>'])} 0" if _QR.random() < .2 else ""
    if _QR.random() < .6:
        return f"select xq.k, {aggs} from xq{where} group by xq.k"
    return f"select {aggs} from xq{where}"


def mixed_compare_query():
    c = R.choice(["mc.i", "mc.f", "mc.r", "mc.b", "mc.d", "mc.dl", "mc.dl::double", "mc.dl::real"])
    if c == "mc.b":  # (DuckDB compares a boolean with a number for = and <> only)
        return (f"select count(*), sum(mc.i % 1000) from mc where mc.b {R.choice(['=', '<>'])} "
                f"{R.choice(['1', '1.0', '0', '0.0', '1e0', '2'])}")
    conds = [f"{c} {R.choice(['=', '<>', '<', '<=', '>', '>='])} {R.choice(MC_LITERALS)}" for _ in range(R.randint(1, 2))]
    if R.random() < .3:
        conds = [f"{R.choice(MC_LITERALS)} {R.choice(['=', '<', '>='])} {c}"]
    return f"select count(*), sum(mc.i % 1000), min(mc.d) from mc where {' and '.join(conds)}"


def mk_dates(n, seed):  # dates and timestamps far from today: before year 1, past 9999
    r = random.Random(seed)
    days = [None if r.random() < .1 else r.choice([r.randint(-800000, -700000), r.randint(-1000, 30000), r.randint(2900000, 2932000)]) for _ in range(n)]
    return pa.table({"i": pa.array(range(n)), "d": pa.array(days, pa.date32()),
                     "ts": pa.array([None if x is None else x * 86_400_000_000 + r.randint(0, 86_400_000_000 - 1) for x in days], pa.timestamp("us"))})
pq.write_table(mk_dates(50, 5), root/"dd.parquet", row_group_size=11)


def mk_infinite_dates(n, seed):  # the same with DuckDB's 'infinity' / '-infinity' (its integers' extremes)
    t = mk_dates(n, seed)
    r = random.Random(seed + 1)
    pick = [r.random() for _ in range(n)]
    d = [(2**31 - 1 if p < .1 else -(2**31 - 1)) if p < .2 else v for p, v in zip(pick, t.column("d").cast(pa.int32()).to_pylist())]
    ts = [(2**63 - 1 if p < .15 else -(2**63 - 1)) if p < .2 or .9 < p < .95 else v
          for p, v in zip(pick, t.column("ts").cast(pa.int64()).to_pylist())]
    return pa.table({"i": t.column("i"), "d": pa.array(d, pa.int32()).cast(pa.date32()),
                     "ts": pa.array(ts, pa.int64()).cast(pa.timestamp("us"))})
pq.write_table(mk_infinite_dates(50, 6), root/"di.parquet", row_group_size=11)


def mk_bits(n, seed):  # DuckDB's BIT columns reach Parquet as their text of 0s and 1s
    r = random.Random(seed)
    bits = [None if r.random() < .1 else "".join(r.choice("01") for _ in range(r.choice([1, 4, 8, 9]))) for _ in range(n)]
    return pa.table({"i": pa.array(range(n)), "b": pa.array(bits, pa.string()),
                     "x": pa.array([None if r.random() < .1 else r.randint(-20, 20) for _ in range(n)], pa.int32())})
pq.write_table(mk_bits(40, 7), root/"bt.parquet", row_group_size=9)
# Values mostly falling from row group to row group (later ones ruled out by a MIN / MAX bound:
# minmax_bounds), keys with NULLs, groups that first appear late with the smallest values, and
# values NULL for a while: what skipping a row group on its statistics and keys must get right.
_MR = random.Random(50_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
def mk_minmax(n, rising):
    ks = ["p", "q", "r", None, "late"]
    rows = []
    for j in range(n):
        v = (j if rising else n - j) * 10 + _MR.randint(-15, 15) if _MR.random() < .85 else _MR.randint(-50, 10 * n)
        k = _MR.choice(ks[:4]) if j < n - 8 else _MR.choice(ks)
        rows.append((k, _MR.randint(0, 2), None if _MR.random() < .1 else v))
    return pa.table({"k": pa.array([r[0] for r in rows], pa.string()), "h": pa.array([r[1] for r in rows], pa.int32()),
                     "v": pa.array([r[2] for r in rows], pa.int64()),
                     "s": pa.array([None if r[2] is None else f"s{r[2] + 100:06d}" for r in rows], pa.string()),
                     "dt": pa.array([None if r[2] is None else dt.date(2000, 1, 1) + dt.timedelta(days=r[2]) for r in rows], pa.date32())})
pq.write_table(mk_minmax(120, False), root/"mm.parquet", row_group_size=_MR.choice([7, 10, 13]))  # MAX skips
pq.write_table(mk_minmax(120, True), root/"mr.parquet", row_group_size=_MR.choice([7, 10, 13]))   # MIN skips

# Rows cut early (ct, and the folder cf: its files with statistics and without): top-k candidates,
# the top-k and join runtime filters, MIN / MAX bounds, row-group pruning and DISTINCT ... LIMIT
# decide which rows / row groups cannot matter before the exact computation, and each assumes an
# edge -- more than 4 x k rows a chunk, a row group of only NULLs, one of a single value, one of
# NaN and NULL, one of -0.0 and 0.0, statistics on some files only. The tables are large enough
# to switch them on (cut_query, from its own RNG).
_XR = random.Random(195_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
def mk_cut(n, seed):
    r = random.Random(seed)
    words = ["", "a", "a\x00", "ab", "abcdefgh", "abcdefghi", "b", "zz", "\u00e9", "~"]
    def x(i):
        g = i // 300
        return None if g == 2 else (7 if i % 300 == 150 else None) if g == 4 else None if r.random() < .4 else r.randint(-40, 40)
    def f(i):
        g = i // 300
        if g == 1: return float("nan") if i % 3 else None
        if g == 3: return -0.0 if i % 2 else 0.0
        return None if r.random() < .2 else r.choice([0.0, -0.0, float("nan"), float("inf"), float("-inf"), r.uniform(-50, 50)])
    return pa.table({
        "i": pa.array(range(n), pa.int64()), "x": pa.array([x(i) for i in range(n)], pa.int64()),
        "g": pa.array([r.randint(0, 3) for _ in range(n)], pa.int32()), "f": pa.array([f(i) for i in range(n)], pa.float64()),
        "r": pa.array([None if r.random() < .1 else r.choice([16777216.0, 16777218.0, 0.1, -1.5]) for _ in range(n)], pa.float32()),
        "s": pa.array([None if i // 300 == 5 or r.random() < .2 else r.choice(words) for i in range(n)], pa.string()),
        "d": pa.array([None if r.random() < .1 else dt.date(2000, 1, 1) + dt.timedelta(days=i // 300 * 50 + r.randint(0, 40)) for i in range(n)], pa.date32()),
        "dec": pa.array([None if r.random() < .1 else decimal.Decimal(r.randint(-9999, 9999)) / 100 for _ in range(n)], pa.decimal128(9, 2)),
        "b": pa.array([None if r.random() < .1 else r.random() < .3 for _ in range(n)], pa.bool_()),
        "big": pa.array([r.choice([2 ** 53, 2 ** 53 + 2, 2 ** 63 - 1, -2 ** 63, 5, None]) for _ in range(n)], pa.int64()),
        # sums past 64 bits (DuckDB's HUGEINT): output only -- as a key they were zeros
        "hv": pa.array([decimal.Decimal(r.choice([9 * 10 ** 17, -9 * 10 ** 17, 8 * 10 ** 17, 1])) for _ in range(n)], pa.decimal128(18, 0)),
    })
CUT = mk_cut(2400, _XR.randrange(1000))
pq.write_table(CUT, root/"ct.parquet", row_group_size=300)
(root/"cf").mkdir(exist_ok=True)
for _j in range(3):
    pq.write_table(CUT.slice(_j * 800, 800), root/"cf"/f"p{_j}.parquet", row_group_size=250, write_statistics=_j != 1)

# Narrow integers near their ends (z): arithmetic with small integer literals, which DuckDB types
# as the column's type where they fit (INTEGER_LITERAL: i8 + 1 overflows at 127, i8 + 1000 is an
# INTEGER) and INTEGER * INTEGER an INTEGER -- sluice once answered 128 where DuckDB raises. Half
# the rows sit at or next to an end (in some row groups none do), the rest small.
_ZR = random.Random(60_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
_ZENDS = {"i8": (pa.int8(), 127), "i16": (pa.int16(), 32767), "i32": (pa.int32(), 2 ** 31 - 1), "i64": (pa.int64(), 2 ** 63 - 1)}
def mk_narrow(n):
    def val(hi, j):
        if _ZR.random() < .1: return None
        if j // 20 % 2 and _ZR.random() < .6: return _ZR.choice([hi, hi - 1, hi - 2, -hi - 1, -hi, -hi + 1, hi // 2, -hi // 2])
        return _ZR.randint(-20, 20)
    return pa.table({"k": pa.array([j % 3 for j in range(n)], pa.int32()), "o": pa.array(range(n), pa.int64()),
                     **{c: pa.array([val(hi, j) for j in range(n)], t) for c, (t, hi) in _ZENDS.items()}})
pq.write_table(mk_narrow(80), root/"z.parquet", row_group_size=20)

# Nested columns (issue 51): the seeded events table (sluice.datagen.events: structs within
# structs, lists of strings, numbers and structs, a map; NULL / empty edges), small row groups,
# and queries over it from their own RNG (the other queries of a seed are unchanged).
from sluice.datagen.events import events_table  # noqa: E402
_NR = random.Random(70_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
pq.write_table(events_table(90, _NR.randrange(1000)), root/"ev.parquet", row_group_size=_NR.choice([7, 20, 90]))


def _idx():
    return _NR.choice(["1", "2", "-1", "-2", "0", "5", "-7", "(event_id % 4)", "(event_id % 5 - 2)"])


def nested_value():
    """An expression over ev's nested columns."""
    return _NR.choice([
        "user.id", "user.name", "(user).address.city", "user['address']['zip']", "user is null", "user.address is null",
        "struct_extract(user, 'name')", f"tags[{_idx()}]", f"scores[{_idx()}]", f"items[{_idx()}].sku",
        f"items[{_idx()}]['price']", "len(tags)", "array_length(scores)", "len(items)",
        f"scores[{_idx()}:{_idx()}]", f"tags[:{_idx()}]", f"scores[{_idx()}:]",
        f"list_contains(tags, {_NR.choice(['red', 'sale', 'NULL', 'x y', ''])!r})",
        f"list_contains(scores, {_NR.randint(-50, 1000)})", "list_contains(scores, null)",
        "list_sum(scores)", "list_min(scores)", "list_max(tags)", "list_avg(scores)",
        "list_sort(scores)", "list_sort(tags, 'desc')", "list_sort(scores, 'asc', 'nulls first')",
        "list_sort(list_distinct(tags))", "list_concat(tags, tags)", "tags || [kind]", "list_concat(scores, null)",
        f"attrs['k{_NR.randint(0, 6)}']", f"element_at(attrs, 'k{_NR.randint(0, 6)}')", "list_sort(map_keys(attrs))",
        "cardinality(attrs)", "list_sum(map_values(attrs))", "[event_id, user.id]", "{'e': event_id, 't': tags}",
        "coalesce(tags, ['none'])", "case when event_id % 3 = 0 then items end", "tags", "attrs", "user",
        # lambdas (sluice.sql.lambdas): positions, captured columns, nesting, NULL / numeric conditions
        f"list_transform(scores, lambda x: x * {_NR.randint(-3, 3)} + event_id)", "list_transform(tags, lambda t, i: t || i)",
        f"list_filter(scores, lambda x: x > {_NR.randint(0, 100)})", "list_filter(tags, lambda t, i: i % 2 = 0 or t is null)",
        "list_filter(scores, lambda x: x % 3)", "list_filter(items, lambda it: it.qty > event_id % 4)",
        f"list_reduce(scores, lambda a, x: a + coalesce(x, {_NR.randint(0, 2)}), 0)", "list_reduce(tags, lambda a, t: a || t, kind)",
        "list_reduce(scores, lambda a, x, i: a + x * i, 0.5)", "[x + event_id for x in scores if x is not null]",
        "list_transform(tags, lambda t: list_filter(scores, lambda s: s > length(t)))",
        "map(map_keys(attrs), map_values(attrs))", "map_entries(attrs)", "map {'id': event_id, 'k': len(tags)}",
        "map_from_entries(list_transform(scores, lambda s, i: {'k': i, 'v': s}))",
        # the empty list [] meets the other side's type; lists of numbers compared element by element
        "case when event_id % 2 = 0 then [] else tags end", "coalesce(scores, [])", "list_concat([], scores)",
        f"scores {_NR.choice(['=', '<>', '<', '<=', '>', '>='])} {_NR.choice(['[]', '[500]', '[null]', '[100, null, 3]'])}",
        f"[{_NR.randint(0, 900)}, null] {_NR.choice(['<', '>='])} scores", "list_contains([], event_id)",
        "list_reduce(list_transform(items, lambda it: it.price), lambda a, p: a + p, 0)",
        # set tests of two lists (NULL elements take no part) and DuckDB's "NULL"[] ([NULL])
        "list_has_any(tags, " + _NR.choice(["['red', null]", "[]", "[null]", "tags", "null"]) + ")",
        f"list_has_all(scores, {_NR.choice(['[]', '[null]', f'[{_NR.randint(0, 900)}]', 'list_sort(scores)[1:2]'])})",
        f"{_NR.choice(['scores', '[1, null]'])} {_NR.choice(['&&', '@>', '<@'])} {_NR.choice(['scores', '[100, 1]', '[null]'])}",
        f"list_has_any(items, {_NR.choice(['items', '[null]'])})", f"scores {_NR.choice(['=', '<'])} [null]",
        "coalesce(scores, [null])"])


def nested_pred():
    return _NR.choice([f"len(tags) > {_NR.randint(0, 3)}", f"list_contains(tags, {_NR.choice(['red', 'blue', 'a,b'])!r})",
                       f"user.address.zip > {_NR.randint(1000, 99999)}", f"attrs['k{_NR.randint(0, 5)}'] > {_NR.randint(0, 500)}",
                       "user is not null", "scores[1] is null", f"list_sum(scores) < {_NR.randint(0, 3000)}",
                       f"kind = {_NR.choice(['click', 'buy', 'view'])!r}"])


def nested_query():
    q = _nested_query()
    # nested values as values and lists made by aggregation (issue 51's second slice): from
    # their own RNG, drawn after the query above so _NR's stream is unchanged
    q = nested_value_query() if _VR.random() < 0.5 else q
    q = struct_key_query() if _SR.random() < 0.2 else q
    q = list_order_query() if _OR.random() < 0.15 else q
    q = struct_order_query() if _OR.random() < 0.12 else q
    return lambda_form_query() if _LR.random() < 0.3 else q


_OR = random.Random(210_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


def list_order_query():
    """Comparisons of LISTs of numbers (kernels/list_compare: position by position, then the
    all-elements kernel for rows agreeing past :data:`POSITIONS`): a list against itself
    sorted, its own prefix, a copy with one element changed, long constants with NULLs."""
    r = _OR
    op = r.choice(["=", "<>", "<", "<=", ">", ">="])
    k = r.randint(1, 7)
    const = "[" + ", ".join(r.choice(["null", str(r.randint(0, 900))]) for _ in range(r.randint(0, 7))) + "]"
    other = r.choice([
        "list_sort(scores)", f"scores[1:{k}]", f"scores[:{k}] || [{r.choice(['null', str(r.randint(0, 900))])}::bigint]",
        f"list_transform(scores, lambda x, i: case when i = {k} then x + 1 else x end)", const,
        "coalesce(scores, [])", f"case when event_id % {r.randint(2, 4)} = 0 then scores end"])
    left = r.choice(["scores", "scores || scores", "list_transform(scores, lambda x: x / 2)"])
    if left.endswith("x / 2)"):
        other = f"list_transform({other}, lambda x: x / 2)"
    if r.random() < .5:
        return f"select event_id, {left} {op} {other} from ev order by event_id"
    return f"select count(*), count({left} {op} {other}) from ev where {left} {op} {other}"


#: STRUCT sort keys (sorted as their fields: kernels/struct_order.py): NULL structs and fields,
#: a struct within a struct, LIST and string fields.
_STRUCT_SORTS = ["user", "user.address", "{'c': user.address.city, 'i': user.id}", "{'t': tags, 'k': kind}",
                 "{'a': user.address, 's': scores[1]}", "{'n': user.name, 'z': case when event_id % 3 = 0 then null "
                 "else user.address.zip end}"]


def struct_order_query():
    """ORDER BY STRUCT keys, in both directions and NULL placements, with and without LIMIT,
    and a window ordered by one."""
    r = _OR
    keys = ", ".join(f"{r.choice(_STRUCT_SORTS)} {r.choice(['', 'asc', 'desc'])} {r.choice(['', 'nulls first', 'nulls last'])}"
                     for _ in range(r.randint(1, 2)))
    if r.random() < .2:
        return f"select event_id, row_number() over (order by {keys}, event_id) from ev order by event_id"
    lim = r.choice(["", "", f" limit {r.randint(1, 30)}", f" limit {r.randint(1, 10)} offset {r.randint(1, 9)}"])
    return f"select event_id, user.address from ev order by {keys}, event_id{lim}"


_SR = random.Random(130_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
#: STRUCT keys of scalar fields (keyed by their fields: kernels/nested_keys.equality_keys) with
#: NULL structs and fields, inner structs, integer fields of two widths; and struct fields read
#: alone by the scan (plan/rules/struct_fields.py). ``{p}``: the table's alias.
_STRUCT_KEYS = ["{{'c': ({p}user).address.city, 'i': {p}user.id}}", "{p}user.address", "{p}user",
                "{{'i': {p}user.id::int, 'z': ({p}user).address.zip}}", "{{'i': {p}user.id, 'z': ({p}user).address.zip::smallint}}",
                "{{'a': {{'k': {p}kind, 'n': {p}user.name}}, 'b': {p}event_id % 3 = 0}}",
                "{{'x': {p}tags[1], 'y': {p}scores[1]}}", "{{'d': {p}ts::date, 'n': {p}user.name}}"]


def struct_key_query():
    """Joins, GROUP BY, DISTINCT and IN on STRUCT keys (a NULL struct never matches; NULL fields
    are equal, in joins too, as DuckDB has them)."""
    r = _SR
    k = r.choice(_STRUCT_KEYS)
    a, b = k.format(p="a."), k.format(p="b.") if r.random() < .8 else r.choice(_STRUCT_KEYS).format(p="b.")
    u = k.format(p="")
    f = r.random()
    if f < .35:
        return f"select count(*), count(b.event_id) from ev a {r.choice(['', 'left', 'right', 'full'])} join ev b on {a} = {b}"
    if f < .55:
        return f"select {u}, count(*), sum(event_id) from ev group by 1"
    if f < .7:
        return f"select count(distinct {u}), count(*) from ev" if r.random() < .5 else f"select distinct {u} from ev"
    if f < .85:
        return f"select event_id from ev where {u} {r.choice(['in', 'not in'])} (select {u} from ev where event_id % 3 = 0)"
    return (f"select user.address.city, user.id, count(*) from ev where user.address.zip {r.choice(['>', '<', '='])} "
            f"{r.randint(1000, 99999)} group by all")


_LR = random.Random(120_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


def lambda_form_query():
    """Lambdas where a review found wrong answers and plan errors (issue 51): beside an UNNEST
    in one select list (a capture of UNNEST's hidden column), UNNEST inside a body (refused),
    decimals cast inside lists (a precision dropped), MIN / MAX of nested values over a window
    (refused), and GROUP BY keys' expressions read inside a body above the aggregation."""
    r = _LR
    k = r.random()
    if k < .25:
        u = r.choice(["tags", "scores", "map_keys(attrs)"])
        lam = r.choice(["list_transform(scores, lambda x: x + event_id)", "list_filter(tags, lambda t: t = kind)",
                        f"list_reduce(scores, lambda a, x: a + coalesce(x, 0), {r.randint(0, 3)})",
                        "[x || kind for x in tags]"])
        return f"select event_id, unnest({u}) as u, {lam} from ev"
    if k < .35:
        return "select event_id, list_transform([[1, 2], [event_id]], lambda l: unnest(l)) from ev"
    if k < .6:
        p, s = r.choice([(4, 2), (6, 2), (9, 3), (3, 1), (18, 4)])
        e = r.choice([f"list_transform(scores, lambda x: x / {r.randint(1, 9)})::decimal({p},{s})[]",
                      f"list_transform(scores, lambda x: cast(x as decimal({p},{s})))",
                      f"list_transform(items, lambda it: it.price)::decimal({p},{s})[]",
                      f"[1.25, 22.5, null]::decimal({p},{s})[]", f"{{'a': 9.995}}::struct(a decimal({p},{s}))"])
        return f"select event_id, {e} from ev"
    if k < .7:
        return (f"select event_id, {r.choice(['min', 'max'])}({r.choice(['tags', 'scores', 'user', 'attrs'])}) "
                f"over (partition by kind) from ev")
    key = r.choice(["length(kind)", "kind || 'x'", "event_id % 3", "user.address.city"])
    lam = r.choice([f"list_transform([1, 2], lambda x: x || ({key}))", f"list_filter(tags, lambda t: t || ({key}) <> 'a')",
                    f"list_transform(list(event_id order by event_id), lambda x: x || ({key}))",
                    f"list_transform([1], lambda x: list_transform([2], lambda y: x + y || ({key})))"])
    return f"select {key} as g, {lam}, count(*) from ev group by {key}"


_VR = random.Random(80_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
_NESTED_KEYS = ["tags", "scores", "user", "user.address", "attrs", "items", "[event_id % 3, null]",
                "{'a': kind, 'b': tags[1]}", "list_sort(tags)", "map_keys(attrs)"]
_NESTED_PAIRS = [("tags", "['red']"), ("scores", "[50, null]"), ("user.address", "user.address"), ("items", "items"),
                 ("scores", "list_sort(scores)"), ("list_sort(tags)", "list_sort(list_distinct(tags))"), ("attrs", "attrs"),
                 ("[event_id % 2, user.id]", "[1, null]"), ("{'k': kind}", "{'k': 'buy'}")]


def nested_value_query():
    """GROUP BY / DISTINCT / ORDER BY / joins / set operations / comparisons on nested values, and
    LIST / ARRAY_AGG."""
    r = _VR
    nv = r.choice(_NESTED_KEYS)
    where = f" where {r.choice(['event_id % 2 = 0', 'len(tags) > 1', 'user is not null', 'kind = ' + repr('buy')])}" \
        if r.random() < .4 else ""
    k = r.random()
    if k < .15:
        return f"select {nv}, count(*), sum(event_id) from ev{where} group by 1"
    if k < .25:
        return f"select distinct {nv} from ev{where}" if r.random() < .6 else f"select count(distinct {nv}) from ev{where}"
    if k < .4:
        return (f"select event_id, {nv} from ev{where} order by {nv} {r.choice(['', 'desc'])} "
                f"{r.choice(['', 'nulls first', 'nulls last'])}, event_id limit {r.randint(1, 40)}")
    if k < .55:
        a, b = r.choice(_NESTED_PAIRS)
        op = r.choice(["=", "<>", "<", "<=", ">", ">=", "is distinct from", "is not distinct from"])
        if r.random() < .5:
            return f"select event_id, {a} {op} {b} from ev{where}"
        return f"select count(*) from ev where {a} {op} {b}"
    if k < .65:
        c = r.choice(["tags", "scores", "user", "user.address", "attrs"])
        return f"select a.event_id, b.event_id from ev a {r.choice(['', 'left'])} join ev b on a.{c} = b.{c}"
    if k < .75:
        op = r.choice(["union", "union all", "intersect", "except", "intersect all", "except all"])
        return f"select {nv} from ev{where} {op} select {nv} from ev where event_id % {r.randint(2, 4)} = 0"
    if k < .78:
        f = r.choice([f"list_slice(scores, {r.randint(-3, 3)}, {r.randint(-3, 4)})", "array_slice(tags, 2, null)",
                      f"string_split(user.name, {r.choice(['a', 'an', 'x', ' '])!r})", "str_split(tags[1], ',')",
                      f"regexp_extract_all(user.name, {r.choice(['[aeiou]+', 'a|e', '[a-z][a-z]'])!r})",
                      f"regexp_extract_all(user.address.city, '(a)|([a-z])', {r.randint(0, 2)})"])
        return f"select event_id, {f} from ev{where}" if r.random() < .7 else f"select {f}, count(*) from ev group by 1"
    if k < .82:
        return f"select event_id from ev where tags in (['red'], ['sale', 'blue'], {r.choice(['null', 'tags', '[kind, null]'])})"
    order = r.choice(["event_id", "event_id desc", "ts nulls first, event_id"])
    x = r.choice(["event_id", "kind", "tags", "user.address", "scores[1]", "attrs"])
    distinct = r.choice(["kind", "scores[1]", "tags[1]", "tags"])
    aggs = (f"list({x} order by {order}), array_agg(distinct {distinct} order by {distinct})"
            + (f", histogram({r.choice(['kind', 'scores[1]', 'tags[1]', 'user.address.city', 'tags'])})"
               if r.random() < .5 else "")
            + (f", {r.choice(['min', 'max'])}({nv})" if r.random() < .5 else ""))
    if r.random() < .6:
        return f"select {r.choice(['kind', 'user.address', 'tags'])} as g, {aggs} from ev{where} group by 1"
    return f"select {aggs} from ev{where}"


def _nested_query():
    k = _NR.random()
    where = f" where {nested_pred()}" if _NR.random() < .5 else ""
    if k < 0.55:
        sel = ", ".join(nested_value() for _ in range(_NR.randint(1, 4)))
        q = f"select event_id, {sel} from ev{where}"
        if _NR.random() < .3:
            q += f" order by event_id limit {_NR.randint(0, 30)}"
        return q
    if k < 0.7:
        return f"select event_id, unnest({_NR.choice(['tags', 'scores', 'map_keys(attrs)', 'list_sort(scores)'])}) from ev{where}"
    if k < 0.85:
        lst, f = _NR.choice([("e.items", "x.sku, x.qty, x.price"), ("e.tags", "x"), ("e.scores", "x, x + 1"),
                             ("map_values(e.attrs)", "x")])
        return f"select e.event_id, {f} from ev e, unnest({lst}) as u(x)" + (f" where {nested_pred()}" if _NR.random() < .4 else "")
    agg = _NR.choice(["count(*)", "sum(list_sum(scores))", "count(tags[1])", "max(len(items))", "min(user.address.zip)",
                      "sum(attrs['k1'])", "count(user)"])
    if _NR.random() < .4:
        return f"select kind, {agg} from ev{where} group by kind"
    if _NR.random() < .5:  # rows sharing one list (a window's per group; a join's build row): spilled and on the wire
        lst = _NR.choice(["list(event_id order by event_id desc)", "list(user order by event_id)",
                          "list(tags order by event_id)"])
        return (f"select e.event_id, len(g.l), g.l[{_idx()}], g.l[-1] from ev e join (select kind, {lst} as l "
                "from ev group by kind) g on e.kind = g.kind")
    return "select x.sku, count(*), sum(x.qty) from ev e, unnest(e.items) as u(x) group by x.sku"


ZCOLS = [f"z.{c}" for c in _ZENDS]
ZLITS = ["0", "1", "2", "3", "-1", "-2", "7", "100", "127", "128", "-128", "-129", "255", "1000", "32767", "32768",
         "-32768", "40000", "2147483647", "2147483648", "-2147483648", "3000000000", "(1)", "- 1", "1::integer",
         "1::tinyint", "2::smallint", "1::bigint", "(1 + 1)"]
def narrow_expr(depth=0):
    c = R.random()
    if depth > 1 or c < .3: return R.choice(ZCOLS)
    if c < .75:
        a, b = narrow_expr(depth + 1), R.choice(ZLITS) if R.random() < .8 else narrow_expr(depth + 1)
        if R.random() < .3: a, b = b, a
        return f"({a} {R.choice(['+', '-', '*', '//', '%'])} {b})"
    if c < .8: return f"(-{narrow_expr(depth + 1)})"
    if c < .85: return f"abs({narrow_expr(depth + 1)})"
    if c < .92: return f"coalesce({R.choice(ZCOLS)}, {R.choice(ZLITS)})"
    return f"case when z.k = {R.randint(0, 2)} then {narrow_expr(depth + 1)} else {R.choice(ZLITS)} end"
def narrow_query():
    """Narrow integer columns at their ends with small integer literals (overflow or widening,
    as DuckDB types the literal); DuckDB's overflow errors must be sluice's too (checked below)."""
    where = R.choice(["", "", f" where z.k = {R.randint(0, 2)}", " where z.o < 20", " where z.o >= 20 and z.o < 40",
                      # x + c1 op c2 is x op c2 - c1 in both (DuckDB moves the constant: no overflow)
                      f" where {R.choice(ZCOLS)} {R.choice(['+', '-'])} {R.choice(['1', '2', '100'])} {R.choice(['<', '>=', '=', '<>'])} {R.choice(['0', '5', '-3'])}",
                      f" where {narrow_expr()} {R.choice(['<', '>=', '=', '<>'])} z.k",
                      # an integer with a decimal: exact at any magnitude (i64 < 1.5 was refused)
                      f" where {R.choice(ZCOLS)} {R.choice(['<', '>=', '=', '<>'])} {R.choice(['1.5', '-0.5', '2.0', '126.9', '-128.0'])}"])
    k = R.random()
    if k < .5:
        return f"select z.o, {', '.join(narrow_expr() for _ in range(R.randint(1, 3)))} from z{where}"
    if k < .85:  # (grouped: DuckDB's sum rewriter answers an ungrouped SUM(x + c) however x + c overflows)
        aggs = ", ".join(f"{R.choice(['sum', 'min', 'max', 'avg', 'count'])}({narrow_expr()})" for _ in range(R.randint(1, 3)))
        return f"select z.k, {aggs} from z{where} group by z.k"
    return f"select count(*) from z where {narrow_expr()} {R.choice(['<', '>', '=', '<>'])} {R.choice(ZCOLS)}"

# String similarity functions (LEVENSHTEIN, JARO, ...) over text of multi-byte UTF-8, combining
# marks, empty strings and NULLs, from their own RNG (table and queries): other queries of a
# seed stay as they were. sim.ph / sim.qh have equal lengths (never empty) for HAMMING.
_SR = random.Random(70_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
_SIM_ALPHABET = ["a", "b", "c", "A", "\u00e9", "\u00e8", "\u00df", "\u8a9e", "\U0001F600", "e\u0301", " "]
def _sim_word(n):
    return "".join(_SR.choice(_SIM_ALPHABET) for _ in range(_SR.randint(0, n)))
_SIM_POOL = [_sim_word(8) for _ in range(15)] + ["", "kitten", "sitting", "martha", "marhta"]
_SIM_P = [None if _SR.random() < .1 else _SR.choice(_SIM_POOL) if _SR.random() < .6 else _sim_word(12) for _ in range(120)]
pq.write_table(pa.table({"i": pa.array(range(120), pa.int64()), "g": pa.array([j % 4 for j in range(120)], pa.int32()), "p": _SIM_P,
                         "q": [None if _SR.random() < .1 else _SR.choice(_SIM_POOL) if _SR.random() < .5 else _sim_word(12) for _ in range(120)],
                         "ph": [None if x is None else (x or "z") for x in _SIM_P],
                         "qh": [None if x is None else ("".join(_SR.choice([c, "a", "\u00e9"]) for c in x) or "y") for x in _SIM_P]}),
               root/"sim.parquet", row_group_size=25)
SIM_FUNCS = ["levenshtein", "editdist3", "damerau_levenshtein", "jaro_similarity", "jaro_winkler_similarity"]
def sim_arg(col, lit=True):
    return _SR.choice([col, col, col, f"upper({col})", f"({col} || 'x')", f"substring({col}, 2, 3)", f"reverse({col})"]
                      + [_SR.choice(["'kitten'", "''", "'\u00e9\U0001F600a'", "'martha'", "NULL"])] * lit)
def sim_expr(tab="sim"):
    k = _SR.random()
    x, y = (f"{tab}.p", f"{tab}.q") if tab == "sim" else ("t.s", "u.s")
    if _SR.random() < .5: x, y = y, x
    if k < .6: return f"{_SR.choice(SIM_FUNCS)}({sim_arg(x)}, {sim_arg(y)})"
    if k < .75: return f"{_SR.choice(['jaro_similarity', 'jaro_winkler_similarity'])}({sim_arg(x)}, {sim_arg(y)}, {_SR.choice(['0.5', '0.8', '0', '1', 'NULL', '0.7::double'])})"
    if k < .85 and tab == "sim": return f"{_SR.choice(['hamming', 'mismatches'])}(sim.ph, {_SR.choice(['sim.qh', 'reverse(sim.ph)', 'sim.ph'])})"
    # (columns: sluice refuses length(NULL) and NULL <> '', and raises for hamming('', '') under a
    # CASE no row takes: it evaluates functions of constants while planning, as for 1 // 0)
    a, b = sim_arg(x, False), sim_arg(y, False)
    if _SR.random() < .5:  # DuckDB's errors (lengths, empty strings) guarded as DuckDB guards them: by CASE
        return f"case when length({a}) = length({b}) and {a} <> '' then hamming({a}, {b}) end"
    return f"case when {a} <> '' and {b} <> '' then jaccard({a}, {b}) else -1 end"
def similarity_query():
    k = _SR.random()
    if k < .4:
        where = _SR.choice(["", " where sim.g = 1", f" where {sim_expr()} {_SR.choice(['<', '>=', '='])} {_SR.choice(['1', '2', '0.6', '0.9'])}"])
        return f"select sim.i, {', '.join(sim_expr() for _ in range(_SR.randint(1, 3)))} from sim{where}"
    if k < .6:
        return f"select {sim_expr()} as k, count(*), min(sim.i) from sim group by k"
    if k < .8:
        return f"select sim.g, {_SR.choice(['sum', 'avg', 'max', 'min'])}({sim_expr()}) from sim group by sim.g"
    return f"select t.b, u.b, {sim_expr('t')} from t join u on t.g = u.g and t.a = u.a"

NUM = ["a", "b", "g", "d", "f"]
INTS = ["a", "b", "g"]
def col(tab, kinds=None):
    return f"{tab}.{R.choice(kinds or NUM)}"
def numexpr(tab, depth=0):
    c = R.random()
    if depth > 2 or c < 0.4: return col(tab)
    if c < 0.55: return str(R.choice([0, 1, 2, 3, -1, 7, 100, "2.5", "0.1"]))
    if c < 0.75: return f"({numexpr(tab, depth+1)} {R.choice(['+','-','*'])} {numexpr(tab, depth+1)})"
    if c < 0.8: return f"abs({numexpr(tab, depth+1)})"
    if c < 0.85: return f"coalesce({col(tab)}, {numexpr(tab, depth+1)})"
    if c < 0.9:  # (no ELSE, or ELSE NULL: the branch's values under the NULLs are never read)
        tail = R.choice([f" else {numexpr(tab, depth+1)}", "", " else null"])
        return f"case when {pred(tab, depth+1)} then {numexpr(tab, depth+1)}{tail} end"
    # a branch that raises (infinite f) where the guard does not need it
    if c < 0.905: return f"case when {tab}.f between -1e9 and 1e9 then cast({tab}.f as integer) else {numexpr(tab, depth+1)} end"
    if c < 0.91: return f"cast({col(tab, INTS)} as bigint)"
    if c < 0.92: return f"({numexpr(tab, depth+1)} / {numexpr(tab, depth+1)})"
    if c < 0.93:  # divided by, a rounded zero's sign shows (-0.0 gives -inf; compare takes -0.0 == 0.0)
        r = f"{R.choice(['round','floor','ceil','trunc'])}({numexpr(tab, depth+1)})"
        return r if R.random() < .5 else f"(1.0 / {r})"
    if c < 0.94: return f"nullif({col(tab)}, {R.choice([0,1,2])})"
    if c < 0.95: return f"{R.choice(['greatest','least'])}({col(tab)}, {numexpr(tab, depth+1)})"
    if c < 0.96: return f"length({strexpr(tab)})"
    if c < 0.97: return f"extract({R.choice(['year','month','day'])} from {tab}.dt)"
    if c < 0.98: return f"(({tab}.dt - date '1995-01-01'))"
    if c < 0.985: return f"cast({col(tab)} as {R.choice(['decimal(10,1)','double','integer','decimal(18,4)'])})"
    if c < 0.99: return R.choice([f"floor({col(tab)})", f"ceil({col(tab)})", f"trunc({col(tab)})", f"sqrt(abs({col(tab)}))", f"sign({col(tab)})", f"({col(tab, INTS)} // {R.choice([2,3,-4])})", f"try_cast({tab}.s as integer)", f"power({col(tab)}, 2)", f"week({tab}.dt)", f"quarter({tab}.dt)"])
    return f"({col(tab, INTS)} % {R.choice([2,3,5])})"
def pred(tab, depth=0):
    c = R.random()
    if depth > 2 or c < 0.45:
        k = R.random()
        if k < 0.5: return f"{numexpr(tab, depth+1)} {R.choice(['<','<=','=','<>','>','>='])} {numexpr(tab, depth+1)}"
        if k < 0.55: return f"{strexpr(tab)} {R.choice(['like','not like','ilike', '<', '=', '>='])} '{R.choice(LIKE_PATTERNS)}'"
        # a pattern from a column (matched per distinct pattern), a LIKE pattern built of the rows' own text
        if k < 0.6: return f"{strexpr(tab)} {R.choice(['like','not like','ilike','not ilike'])} {R.choice([f'{tab}.s', f'({tab}.s || chr(37))', f'(chr(95) || {tab}.s)', f'upper({tab}.s)'])}"
        if k < 0.7: return f"{col(tab)} is {R.choice(['','not '])}null"
        if k < 0.8: return f"{tab}.dt {R.choice(['<','>=','='])} date '{R.choice(['1996-03-01','1999-12-31','2001-06-15'])}'"
        if k < 0.9: return f"{col(tab, INTS)} in ({', '.join(str(R.randint(-2,10)) for _ in range(R.randint(1,4)))}{', null' if R.random()<.2 else ''})"
        return f"{numexpr(tab)} between {R.randint(-10,5)} and {R.randint(0,50)}"
    if c < 0.7: return f"({pred(tab, depth+1)} {R.choice(['and','or'])} {pred(tab, depth+1)})"
    if c < 0.8: return f"not ({pred(tab, depth+1)})"
    if c < 0.9: return f"{tab}.s in ('apple', 'date', '')"
    return f"coalesce({pred(tab, depth+1)}, {R.choice(['true','false'])})"
# SQL LIKE patterns: with an ordinary backslash ('a\\x%' matched nothing through pyarrow's
# match_like, whatever the strings), RE2 metacharacters, and '%a%b%' (searched by RE2).
LIKE_PATTERNS = ['a%', '%e%', '_a%', '%', 'B%', 'cherry', 'a\\x%', '%\\x{%', '%e%r%', '%(%']


def strexpr(tab, depth=0):
    c = R.random()
    if depth > 1 or c < 0.4: return f"{tab}.s"
    return R.choice([f"upper({strexpr(tab, depth+1)})", f"lower({strexpr(tab, depth+1)})", f"substring({strexpr(tab, depth+1)}, {R.randint(1,3)}, {R.randint(0,4)})",
        f"({strexpr(tab, depth+1)} || '-' || {strexpr(tab, depth+1)})", f"trim({strexpr(tab, depth+1)})", f"replace({strexpr(tab, depth+1)}, 'a', 'XY')",
        f"coalesce({tab}.s, 'zz')", f"case when {pred(tab, depth+1)} then {tab}.s else 'other' end", f"cast({tab}.a as varchar)",
        f"case when {pred(tab, depth+1)} then {strexpr(tab, depth+1)} end",
        f"concat({tab}.s, {tab}.a)", f"left({tab}.s, 2)", f"reverse({tab}.s)",
        # positions from a column, slices, and SUBSTRING's default length from -2**32 (it once ran to the end)
        f"substring({tab}.s, {tab}.a, {R.choice(['2', f'{tab}.a', '-1'])})", f"{tab}.s[{tab}.a:{R.randint(-3, 4)}]",
        f"array_slice({tab}.s, {R.randint(-3, 3)}, {tab}.a)", f"substring({tab}.s, {R.choice(['-4294967296', '-2', '0'])})"])
AGGS = ["sum({})", "count({})", "min({})", "max({})", "avg({})", "count(distinct {})", "count(*)"]
def agg(tab):
    a = R.choice(AGGS)
    if a == "count(*)": return a
    e = numexpr(tab) if R.random() < .6 else R.choice([f"{tab}.s", f"{tab}.dt"]) if a.startswith(("min","max","count")) else numexpr(tab)
    return a.format(e)

def query2():
    k = R.random()
    if k < 0.15:
        return (f"with x as (select t.g, t.s, sum(t.b) sb, count(*) c from t where {pred('t')} group by t.g, t.s) "
                f"select x.g, x.s, x.sb, u.b from x {R.choice(['join','left join','full join'])} u on x.g = u.g and x.s = u.s where x.c > {R.randint(0,3)}")
    if k < 0.3:
        w = R.choice(["rows between 2 preceding and 1 following", "rows between unbounded preceding and current row",
                      "range between unbounded preceding and current row", "rows between current row and unbounded following",
                      "range between 5 preceding and 5 following", "rows between 3 preceding and 1 preceding"])
        f = R.choice(["sum(t.a)", "avg(t.d)", "min(t.s)", "max(t.dt)", "count(t.a)", "sum(t.f)", "first_value(t.s)", "last_value(t.a)", "count(*)"])
        return f"select t.b, t.g, {f} over (partition by t.g order by t.a {R.choice(['','desc'])} {R.choice(['','nulls first','nulls last'])}, t.b {w}) from t"
    if k < 0.35:  # COUNT(DISTINCT string) with no GROUP BY: counted, not grouped (distinct_counts)
        # (on ranks: rows hash-partitioned by each DISTINCT argument, per-rank states merged)
        more = R.choice(["", f", sum(distinct {numexpr('t')})", f", avg(distinct {numexpr('t')}), count(distinct t.dt)"])
        return (f"select count(distinct {strexpr('t')}), {agg('t')}{more} from t" +
                (f" where {pred('t')}" if R.random() < .6 else ""))
    if k < 0.45:
        return (f"select {R.choice(['t.g','t.s'])}, {agg('t')}, {agg('t')} from t "
                f"group by {R.choice(['rollup','cube','grouping sets'])} (t.g, t.s)")
    if k < 0.55:
        if R.random() < .3:  # subqueries in QUALIFY / ORDER BY, joined as values first (rows tied alike)
            return R.choice([
                f"select t.b, t.g from t qualify row_number() over (partition by t.g order by t.b, t.s, t.a) "
                f"<= (select count(*) from u where u.g = t.g and {pred('u')})",
                f"select t.b, t.s from t where {pred('t')} order by (select max(u.b) from u where u.a = t.a) "
                f"{R.choice(['', 'desc nulls first'])}, t.b",
                "select t.g, sum(t.b) from t group by t.g order by (select count(*) from u where u.g = t.g), 2"])
        return (f"select t.s, (select count(*) from u where u.g = t.g and u.b > t.b), "
                f"(select min(u.s) from u where u.a = t.a) from t where {pred('t')}")
    if k < 0.65:
        return (f"select t.g, u.g, count(*) from t join u on t.a = u.a join t t2 on t2.g = u.g and t2.s = t.s "
                f"where {pred('t')} group by t.g, u.g")
    if k < 0.75:
        return (f"select date_trunc('{R.choice(['month','year','quarter','week'])}', t.dt) m, count(*), sum(t.b) from t "
                f"where t.dt between date '1996-01-01' and date '2003-01-01' group by 1")
    if k < 0.80:
        return (f"select t.s, string_agg(t.b::varchar, ',' order by t.b) from t where {pred('t')} group by t.s")
    if k < 0.85:  # ORDER BY in an aggregate's call (sluice.sql.aggregation): the rows tied on the
        # ORDER BY keys are alike in the values taken, so DuckDB's answer is one
        o = R.choice(["t.b, t.a, t.s, t.d, t.dt", "t.b desc, t.a, t.s, t.d, t.dt",
                      "t.a nulls first, t.b, t.s, t.d, t.dt", "t.s desc nulls last, t.b, t.a, t.d, t.dt"])
        f = R.choice([f"any_value(t.s order by {o})", f"arbitrary(t.a order by {o})", f"mode(t.s order by {o})",
                      f"mode(t.a order by {o})", f"arg_min(t.s, t.g order by {o})", f"max_by(t.dt, t.g order by {o})",
                      f"sum(t.b order by {o})", f"median(t.a order by {o})",
                      # floats added in an order DuckDB keeps and sluice cannot: refused, never answered
                      f"sum(t.f * 9007199254740992 order by {o})::bigint"])
        if R.random() < .4:  # FILTER on a holistic aggregate: its own window partition
            f += f" filter (where {pred('t')})"
        return (f"select t.g, {f}, count(*) from t" + (f" where {pred('t')}" if R.random() < .5 else "") + " group by t.g")
    if k < 0.88:
        if R.random() < .5:  # COLUMNS(...) expanded (sluice.sql.select_list)
            cols = R.choice(["columns('^[gbs]$')", "columns(['s', 'g'])", "columns(* exclude (d, f, dt))"])
            return f"select distinct on ({cols}) t.g, t.b, t.s from t order by t.g, t.s, t.b desc"
        return "select distinct on (t.g) t.g, t.b, t.s from t order by t.g, t.b desc"
    if k < 0.92:
        return (f"select x.g, x.n, y.m from (select t.g, count(*) n from t where {pred('t')} group by t.g) x "
                f"{R.choice(['join','left join','full join'])} (select u.g, max(u.b) m from u where {pred('u')} group by u.g) y on x.g = y.g")
    return ("select t.g, sum(t.b * t.b * t.b), sum(cast(t.b as bigint) * 10000000000) from t group by t.g")

def query3():
    k = R.random()
    if k < 0.2:
        c = R.choice(['a', 'g', 's'])
        return (f"select t.b, t.s from t {R.choice(['semi','anti'])} join u on t.{c} = u.{c}"
                + (f" and {pred('u')}" if R.random() < .5 else "") + (f" where {pred('t')}" if R.random() < .5 else ""))
    if k < 0.45:
        f = R.choice(["first_value(t.a ignore nulls)", "last_value(t.s ignore nulls)", "lag(t.d, 2 ignore nulls)", "lead(t.a ignore nulls)",
                      "stddev(t.b)", "var_pop(t.f)", "variance(t.d)", "stddev_pop(t.a)", "min(t.s)", "max(upper(t.s))",
                      "sum(t.f)", "avg(t.f)", "count(*) filter (where t.a > 2)", "sum(t.b) filter (where t.s like 'a%')"])
        w = R.choice(["", "rows between 2 preceding and 1 following", "rows between unbounded preceding and current row",
                      "rows between 1 following and 3 following", "rows between current row and unbounded following"])
        if f.startswith(("lag", "lead")): w = ""
        return f"select t.b, {f} over (partition by t.g order by t.b {w}) from t" + (f" where {pred('t')}" if R.random() < .4 else "")
    if k < 0.6:
        return f"select t.g, count_if({pred('t')}), any_value(t.g * 3), sum(try_cast(t.s as integer)) from t where t.s not like '%a%' or t.s is null group by t.g"
    if k < 0.8:
        e = R.choice(["floor(t.d)", "ceil(t.f)", "trunc(t.d)", "sqrt(abs(t.b))", "ln(abs(t.b) + 1)", "power(t.g, 3)", "sign(t.f)", "t.b // (t.g + 1)",
                      "isnan(t.f)", "t.a is not distinct from t.g", "quarter(t.dt)", "week(t.dt)", "last_day(t.dt)", "dayname(t.dt)", "concat_ws('-', t.s, t.a)",
                      "repeat(t.s, 2)", "greatest(t.f, 0.0)"])
        return f"select t.b, {e} from t where {pred('t')}" + (f" order by 2 desc nulls first, t.b limit {R.randint(1, 9)}" if R.random() < .3 else "")
    e = R.choice(["t.f", "t.d", "t.a"])
    return f"select {e}, count(*), min(t.b) from t group by {e} having count(*) > {R.randint(0, 2)}"

NUMCOLS = ["n.i8", "n.i16", "n.i64", "n.u8", "n.r", "n.d2", "n.d6", "n.k"]
SPECS = ["%Y", "%-d", "%m", "%-m", "%j", "%-j", "%U", "%W", "%V", "%G", "%a", "%A", "%b", "%B", "%c", "%x", "%X",
         "%H", "%-I", "%p", "%M", "%S", "%f", "%g", "%y", "%-y", "%u", "%w", "%z", "%%"]
def query4():
    """The edges a peer engine's tests found: every numeric type, mixed-type unions, casts at
    the limits, repeated and positional names, correlated subqueries over empty groups,
    format strings, recursive CTEs, unicode text, far-off dates, empty tables, non-equi joins."""
    k = R.random()
    if k < 0.12:  # aggregates over every numeric type
        c = R.choice(NUMCOLS)
        f = R.choice(["sum({})", "avg({})", "min({})", "max({})", "count(distinct {})", "stddev_samp({})", "var_pop({})",
                      "median({})", "sum(distinct {})", "sum({0}) filter (where {0} > 0)", "arg_min(n.k, n.o)", "arg_max({}, n.o)"]).format(c)
        return f"select n.k, {f} from n group by n.k" if R.random() < .6 else f"select {f} from n"
    if k < 0.22:  # set operations and VALUES over mixed types
        a, b = R.choice(NUMCOLS + ["1", "2.25", "1.5::real"]), R.choice(NUMCOLS + ["0.1", "7", "2.5::double"])
        op = R.choice(["union", "union all", "intersect", "except", "intersect all", "except all"])
        if R.random() < .2:
            return f"select * from (values ({a.split('.')[-1] if a.startswith('n.') else a}), (2.5), (null)) v(x)"
        return f"select {a} from n where n.k < 2 {op} select {b} from n where n.k >= 1"
    if k < 0.32:  # casts at the limits
        c = R.choice(NUMCOLS)
        t = R.choice(["tinyint", "smallint", "integer", "decimal(3,1)", "decimal(2,0)", "decimal(5,3)", "double", "real", "varchar", "utinyint"])
        e = f"try_cast({c} as {t})" if R.random() < .7 else f"try_cast(cast({c} as varchar) as {t})"
        if R.random() < .2:
            e = f"try_cast({R.choice(['0x80', '0x7f', '0xFF', '127', '-129', '1.45', '0.125', '9.95'])!r} as {t})"
        if R.random() < .3:  # the sign of a rounded zero (-0.0 in t.f): 1 / it is -inf in DuckDB
            fn = R.choice(["round(t.f)", "round(t.f, 1)", "round(t.f, -1)", "ceil(t.f)", "trunc(t.f)", "round(t.f * -0.001)"])
            return f"select t.b, 1.0 / {fn} from t where {fn} = 0"
        if R.random() < .15:  # joins on keys at int64's ends
            return (f"select d.name, count(*) from xk x {R.choice(['join', 'left join'])} {R.choice(['dmin', 'dmax'])} d "
                    f"on x.v = d.v group by d.name")
        return f"select n.k, {e}, round({c}, {R.choice([0, 1, 2, -1])}) from n"
    if k < 0.4:  # repeated and positional names
        return R.choice([
            "select * from (select t.a, t.b as a, t.g as a from t) x",
            "select a_1 from (select t.a, t.b as a from t) x where a_1 > 0",
            f"select distinct on ({R.choice([1, 2])}) t.g, t.a, t.b from t order by {R.choice(['1, 3', '2, 3', 't.g, t.b'])}",
            "with c as (select t.s, t.s as p, t.g from t) select * from c",
            f"select t.g, t.s, count(*) from t group by 2, 1 order by {R.choice(['1, 2', '3 desc, 1, 2'])}",
        ])
    if k < 0.52:  # correlated subqueries, over groups that may be empty
        src = R.choice(["u", "e"])
        corr = R.choice([f"{src}.g = t.g", f"{src}.a = t.a", f"{src}.b > t.b", f"{src}.g = t.g and {src}.b < t.b", f"{src}.a <> t.a"])
        body = R.choice(["count(*) + 1", "coalesce(sum({0}.b), -1)", "case when sum({0}.a) > 3 then 0 else 1 end", "count({0}.a) * 2",
                         "max({0}.s)", "avg({0}.d)"]).format(src)
        form = R.random()
        if form < .5:
            return f"select t.b, (select {body} from {src} where {corr}) from t"
        if form < .7:
            return f"select t.b from t where {R.choice(['', 'not '])}exists (select count(*) from {src} where {corr} having count(*) > {R.randint(0, 2)})"
        if form < .85:
            return f"select t.b from t where {R.randint(0, 2)} {R.choice(['in', 'not in'])} (select count(*) from {src} where {corr})"
        return f"select t.b, (select {src}.b from {src} where {corr} order by {src}.b desc limit 1) from t"
    if k < 0.6:  # format strings
        if R.random() < .35:  # parsing back the hour, 12- and 24-hour, with and without AM / PM
            out = R.choice(["%H:%M %p", "%-I:%M %p", "%-H:%M", "%I:%M", "%p %-I"])
            back = R.choice(["%H:%M %p", "%I:%M %p", "%I:%M", "%H:%M", "%p %I"])
            return (f"select t.b, try_strptime(strftime(cast(t.dt as timestamp) + interval {R.randint(0, 1440)} minute, '{out}'), '{back}'), "
                    f"printf('%d|%s|%i', t.b > 0, t.s, t.a) from t")
        fmt = "".join(R.choice(SPECS) + R.choice(["", "-", " ", "/", ":"]) for _ in range(R.randint(1, 4)))
        return f"select t.b, strftime(t.dt, '{fmt}'), strftime(cast(t.dt as timestamp) + interval {R.randint(0, 90000)} second, '{fmt}') from t"
    if k < 0.68:  # recursive CTEs
        return R.choice([
            f"with recursive r(n, s, p) as (select 1, 'x', 'x' union all select n + 1, s || 'y', p || '->' || n from r where n < {R.randint(2, 9)}) select * from r",
            f"with recursive r(k, b, path) as (select t.a, t.b, t.s from t where t.b < {R.randint(0, 5000)} and t.a is not null "
            f"union select u.a, u.b, r.path || '/' || coalesce(u.s, '?') from r join u on u.a = r.k + 1 where length(r.path) < 40) select * from r",
            "with recursive r(x, y) as (select t.g, t.g from t where t.b < 1000 union all select x + 1, y * 2 from r where x < 6) select x, count(*), sum(y) from r group by x",
            # endless, read under a LIMIT (its step reads the work table twice)
            f"with recursive r(l, n) as (select 'a', 0 union all (with x as (select n from r where l = 'a'), y as (select n from r where l = 'b') "
            f"select 'b', n + 1 from x union all select 'a', n + 1 from y)) select n from r where l = '{R.choice('ab')}' limit {R.randint(1, 20)}",
        ])
    if k < 0.76:  # unicode text
        f = R.choice(["reverse(w.w)", "length(w.w)", "upper(w.w)", "lower(w.w)", "substring(w.w, 2, 3)", "left(w.w, 2)", "right(w.w, 1)",
                      "w.w || reverse(w.w)", "lpad(w.w, 6, '*')", "strpos(w.w, 'e')", "w.w like '%\u00e9%'"])
        return f"select w.i, {f} from w" + (" order by w.w, w.i" if R.random() < .3 else "")
    if k < 0.84:  # dates before year 1 and past 9999
        if R.random() < .3:  # timestamp keys: a top-k's bound and a join's runtime filter on them
            return R.choice([
                f"select dd.i, dd.ts from dd order by dd.ts {R.choice(['asc', 'desc'])}, dd.i limit {R.randint(1, 12)}",
                f"select count(*), sum(a.i) from dd a join dd b on a.ts = b.ts where b.i % {R.randint(2, 9)} = 0",
                f"select count(*), sum(a.i) from dd a join dd b on a.d = b.d and a.ts >= b.ts where b.i < {R.randint(0, 50)}"])
        f = R.choice(["cast(dd.d as varchar)", "cast(dd.ts as varchar)", "year(dd.d)", "month(dd.ts)", "dayofweek(dd.d)",
                      "strftime(dd.d, '%Y-%m-%d %j')", "dd.d + 1", "date_trunc('month', dd.d)", "extract(epoch from dd.ts)",
                      "dd.d < date '0001-01-01'", "isinf(dd.ts)", "strftime(dd.ts, '%Y %j')", "cast(dd.d as timestamp)", "dd.ts + interval 1 day"])
        q = f"select dd.i, {f} from dd" + (" order by dd.d, dd.i" if R.random() < .3 else "")
        if R.random() < .2:  # BIT values (its text in bt.b): casts, functions, order, BITSTRING_AGG
            return R.choice([
                "select bt.i, bt.b::bit, bit_count(bt.b::bit), bt.b::bit::varchar from bt order by bt.b::bit, bt.i",
                "select bt.i, bt.x::bit, bt.x::smallint::bit, (bt.b::bit << 2), ~bt.b::bit from bt",
                "select bt.i, bt.b::bit::smallint, get_bit(bt.b::bit, 0), bitstring(bt.b, 12) from bt",
                "select min(bt.b::bit), max(bt.b::bit), count(distinct bt.b::bit) from bt",
                f"select bt.i % {R.randint(2, 5)} g, bitstring_agg(bt.x, -20, 20) from bt group by g",
                "select a.i, b.i from bt a join bt b on a.b::bit = b.b::bit and length(a.b) = 4 and a.b::bit & b.b::bit = a.b::bit"])
        if R.random() < .4:  # DuckDB's 'infinity' / '-infinity' among them (di); ASOF over them too
            q = R.choice([q.replace("dd.", "di.").replace("from dd", "from di"),
                          "select a.i, b.i from di a asof left join dd b on a.ts >= b.ts",
                          "select a.d, count(*), min(a.ts), max(a.ts) from di a group by a.d"])
        return q
    if k < 0.9:  # empty tables
        return R.choice([
            "select t.g, count(e.a), sum(e.b) from t left join e on t.a = e.a group by t.g",
            "select count(*), sum(e.b), min(e.s) from e",
            f"select t.b from t where t.a {R.choice(['in', 'not in'])} (select e.a from e)",
            "select e.a, count(*) from e group by e.a",
            "select t.a from t union select e.a from e",
            "select * from e join u on e.a = u.a",
        ])
    # non-equi joins (the budgeted connection spills or streams them)
    on = R.choice(["t.a < u.a", "t.b >= u.b and t.g <> u.g", "t.f > u.f", "t.d <= u.d and t.a = u.g", "t.dt > u.dt and t.b < u.b + 1000",
                   "t.a > u.a - 2 and t.a < u.a + 2"])
    jt = R.choice(["join", "left join", "full join"])
    return f"select count(*), sum(t.b), max(u.s) from t {jt} u on {on}" + (f" where {pred('t')}" if R.random() < .5 else "")

def like_query():
    """A LIKE pattern against every string (pyarrow's match_like failed after a backslash)."""
    return (f"select t.s, count(*) from t where {R.choice(['t.s', 'upper(t.s)', 't.s || t.s'])} "
            f"{R.choice(['like', 'not like', 'ilike', 'not ilike'])} '{R.choice(LIKE_PATTERNS)}' group by t.s")

def minmax_query():
    """Only MIN / MAX over plain columns, grouped by plain columns: the scan may skip row groups
    the aggregation's bound rules out (minmax_bounds)."""
    src = R.choice(["mm", "mr"])
    keys = R.sample([f"{src}.k", f"{src}.h"], R.randint(0, 2))
    # (a MIN and a MAX of one column skip only row groups strictly inside both bounds)
    one = R.choice(["max", "min"]) if R.random() < .7 else None
    aggs = ", ".join((one or R.choice(["min", "max"])) + f"({src}.{R.choice(['v', 's', 'dt'])})"
                     for _ in range(R.randint(1, 3)))
    q = f"select {', '.join(keys + [aggs])} from {src}"
    if R.random() < .4: q += f" where {R.choice([f'{src}.h <> 1', f'{src}.v > 100', f'{src}.k is not null', f'{src}.s < {chr(39)}s0005{chr(39)}'])}"
    if keys: q += f" group by {', '.join(keys)}"
    return q

def string_minmax_query():
    """String MIN / MAX by group over text whose first bytes mislead: "" (below "\x00..."),
    multi-byte UTF-8, ties on the first byte (the first-byte pass keeps only each group's best)."""
    if R.random() < .5:
        agg = ", ".join(f"{R.choice(['min', 'max'])}(w.w)" for _ in range(R.randint(1, 2)))
        return f"select w.i % {R.randint(1, 4)} as g, {agg} from w" + (" where w.i > 7" if R.random() < .3 else "") + " group by g"
    key = R.choice(["t.g", "t.b % 3", "t.s is null"])
    agg = ", ".join(f"{R.choice(['min', 'max'])}(t.s)" for _ in range(R.randint(1, 2)))
    return f"select {key} as k, {agg} from t" + (f" where {pred('t')}" if R.random() < .4 else "") + " group by k"


# A bare NULL where a type is expected (a function's argument, an operand, a CASE branch, a
# join's ON, WHERE), branches of constants that raise where no row reaches them, BIGINT x
# decimal literals, and DuckDB's forms answered since (forms_query): from their own RNG. They found ``length(NULL)`` / ``NULL <> ''`` refused
# (NULL was an INTEGER), ``LEFT JOIN ... ON NULL`` losing a row, and ``CASE WHEN false THEN
# 1 // 0 ELSE 1 END`` raising while planning.
_NR = random.Random(70_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
def null_arg():
    x = _NR.choice(["t.s", "t.a", "t.b", "t.d", "t.dt", "upper(t.s)", "(t.a + 1)"])
    k = _NR.random()
    if k < .15: return _NR.choice(["length(NULL)", "upper(NULL)", "trim(NULL)", "substring(NULL, 1, 2)", "replace(NULL, 'a', 'b')",
                                   "abs(NULL)", "round(NULL, 1)", "NULL || t.s", "concat(NULL, t.s)", "-NULL", "lpad(NULL, 2, 'x')"])
    if k < .3: return f"(NULL {_NR.choice(['=', '<>', '<', '>=', '+', '-', '*'])} {x})" if x not in ("t.s", "upper(t.s)", "t.dt") \
        else f"(NULL {_NR.choice(['=', '<>', '<', '>='])} {x})"
    if k < .45: return f"case when {pred('t')} then NULL else {x} end"
    if k < .55: return f"case when {pred('t')} then {x} {_NR.choice(['', 'else NULL'])} end"
    if k < .65: return f"coalesce(NULL, {x}{_NR.choice(['', ', NULL'])})"
    if k < .72: return f"(NULL {_NR.choice(['and', 'or'])} {pred('t')})"
    if k < .78: return f"(t.s {_NR.choice(['like', 'not like', 'ilike'])} NULL)"
    if k < .84: return f"(t.a in (NULL, {_NR.randint(-2, 5)}))"
    if k < .9: return f"if({pred('t')}, NULL, {x})"
    return f"nullif({x}, NULL)"
def lazy_arg():
    k = _NR.random()
    if k < .2: return f"case when {_NR.choice(['false', '1 = 0', 'NULL'])} then 1 // 0 else t.a end"
    if k < .35: return f"case when t.a <> 0 then t.b // t.a {_NR.choice(['', 'else -1'])} end"
    if k < .5: return "case when t.a > 0 then t.b % t.a else 0 end"
    if k < .6: return f"coalesce(t.b, {_NR.choice(['1 // 0', 'cast(' + chr(39) + 'x' + chr(39) + ' as integer)'])})"
    if k < .7: return "case when t.s = 'no such' then cast(t.s as integer) else t.g end"
    if k < .8: return f"case when t.a is null then 0 else 1000 // (t.a - {_NR.randint(-5, 12)}) end"  # may divide by zero: both raise
    return f"t.b * {_NR.choice(['0.5', '1.5', '0.25', '0.001', '-2.5', '123.456', '1.0'])}"
def null_query():  # (pred() draws from R: lent _NR meanwhile, so the seed's other queries stay)
    global R
    saved, R = R, _NR
    try:
        return _null_query()
    finally:
        R = saved
def forms_query():  # DuckDB forms answered since: row values, BY NAME, ON subqueries, EXCLUDE
    k = _NR.random()
    if k < .25:
        op = _NR.choice(["=", "<>", "<", "<=", ">", ">="])
        rhs = _NR.choice(["(u.a, u.s)", f"({_NR.randint(-2, 6)}, 'date')", "(u.a, NULL)", "(NULL, u.s)"])
        return f"select t.b, u.b, (t.a, t.s) {op} {rhs} from t join u on t.g = u.g where t.b < 30000"
    if k < .35:
        return f"select t.b from t where (t.a, t.g) {_NR.choice(['in', 'not in'])} ((1, 2), (3, 0), (NULL, 1), ({_NR.randint(-2, 9)}, {_NR.randint(0, 4)}))"
    if k < .5:
        return (f"select t.a, t.s from t where {pred('t')} union all by name "
                f"select u.s, u.g as a, u.dt from u where {pred('u')}")
    if k < .75:
        jt = _NR.choice(["left join", "right join", "full join"])
        sub = _NR.choice([f"u.s in (select t2.s from t t2 where {pred('t2')})", "u.a = (select max(t2.a) from t t2)",
                          "exists (select 1 from t t2 where t2.a = u.a + 1)", "t.g not in (select u2.g from u u2 where u2.a > 3)",
                          "t.a > (select avg(u2.a) from u u2)"])
        return f"select t.b, u.b from t {jt} u on t.g = u.g and {sub}"
    frame = _NR.choice(["partition by t.g order by t.a range between 1 preceding and 1 following",
                        "order by t.g groups between 1 preceding and current row",
                        "partition by t.g rows between unbounded preceding and unbounded following",
                        "order by t.a range between unbounded preceding and current row"])
    ex = _NR.choice(["current row", "group", "ties", "no others"])
    if "rows" in frame and ex != "current row": ex = "no others"  # (peers' order would decide)
    agg = _NR.choice(["sum(t.b)", "count(*)", "count(t.a)", "avg(t.d)", "min(t.s)", "max(t.f)", "min(t.dt)", "sum(t.d)"])
    return f"select t.b, {agg} over ({frame} exclude {ex}) from t"
_TR = random.Random(80_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


_WR = random.Random(90_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


def _row_side(tab):  # a row value over ``tab``'s columns (NULLs in a, s, d), or of constants / NULLs
    return _WR.choice([f"({tab}.a, {tab}.g)", f"({tab}.g, {tab}.a)", f"({tab}.a, {tab}.s)", f"({tab}.a % 3, {tab}.g)",
                       f"row({tab}.a, {tab}.g, {tab}.s)", f"({tab}.g, {tab}.d)"])


def row_subquery_query():  # (a, b) IN / op ANY / ALL (SELECT x, y ...): the per-field NULL rules (issue 47)
    shape = _WR.choice(["(t.a, t.g)", "(t.g, t.a)", "(t.a, t.s)", "(t.a % 3, t.g)", "row(t.a, t.g, t.s)", "(t.g, t.d)"])
    inner = shape.replace("t.", "u2.")
    if _WR.random() < .3:  # constants and NULL fields on the left
        shape = _WR.choice(["(1, 2)", "(NULL::INT, 2)", "(3, NULL::INT)", "(NULL::INT, NULL::INT)"])
        inner = "(u2.a, u2.g)"
    fields = inner[inner.index("(") + 1:-1]
    where = _WR.choice(["", " where u2.g > 1", " where u2.a is not null", " where u2.b < 20000", " where false",
                        " where u2.a = 3"])
    sub = f"select {fields} from u u2{where}"
    if _WR.random() < .2:
        sub += f" union all select {', '.join('NULL' for _ in fields.split(','))}"
    if _WR.random() < .15:
        sub = f"select ({fields}) from u u2{where}"
    op = _WR.choice(["in", "not in", "= any", "<> any", "= all", "<> all", "< any", "<= all", "> any", ">= all",
                     "< all", "> all"])
    if sub.startswith("select (") and op in ("<> any", "= all"):
        op = "in"  # refused: DuckDB follows neither NULL rule there
    cond = f"{shape} {op} ({sub})"
    if _WR.random() < .5:
        return f"select t.b, {cond} from t where t.b < 40000"
    if _WR.random() < .5:
        if op == "<> any":  # DuckDB 2.0.1 keeps the rows whose <> ANY is NULL in a WHERE (not in the select list)
            cond = f"coalesce({cond}, false)"
        return f"select t.b from t where {cond}"
    return f"select count(*) from t where not ({cond}) or t.g = 0"


def right_using_query():  # RIGHT / FULL JOIN ... USING / NATURAL: the merged column's value (issue 47)
    jt = _WR.choice(["right join", "full join", "natural right join", "natural full join"])
    using = "" if jt.startswith("natural") else f" using ({_WR.choice(['a', 'g', 'a, g'])})"
    right = "(select a, g, s as s2 from u where u.b < 30000)"
    left = "(select a, g, b from t where t.b < 30000)"
    sel = _WR.choice(["*", "a, g, count(*) over (partition by a)", "a, x.a, y.a", "g, s2"])
    if sel == "a, x.a, y.a" and "natural" in jt:
        sel = "*"
    return f"select {sel} from {left} x {jt} {right} y{using}"


def quantified_star_query():  # x op ANY / ALL (SELECT * ...): S's one column by *, or two (an error, not an answer)
    op, q = _TR.choice(["=", "<>", "<", "<=", ">", ">="]), _TR.choice(["any", "all"])
    inner = _TR.choice(["select u.a from u", f"select u.a from u where {pred('u')}", "select u.a, u.b from u",
                        "select u.a from u union select 3"])
    return f"select t.b, t.a {op} {q} (select {_TR.choice(['*', 'x.*'])} from ({inner}) x) from t"


def sqltests_query():  # forms DuckDB's own tests found (bench/duckdb_sqltests.py): table functions, EXPORT_STATE, printf, NULL options
    k = _TR.random()
    if k < .25: return quantified_star_query()
    k = _TR.random()
    lo, hi, step = _TR.randint(-20, 20), _TR.randint(-20, 40), _TR.choice([1, 2, 3, -1, -2, 7])
    fn = _TR.choice([f"range({hi})", f"range({lo}, {hi})", f"range({lo}, {hi}, {step})", f"generate_series({lo}, {hi})",
                     f"generate_series({lo}, {hi}, {step})"])
    if k < .4:
        return f"select count(*), sum(r.v), min(r.v), max(r.v) from {fn} r(v)"
    if k < .6:
        return f"select t.b, r.v from t join {fn} r(v) on t.a = r.v where {pred('t')}"
    if k < .75:  # '%.d' is a thousands separator in DuckDB, C's precision 0 in NumPy; with
        # the 0 flag DuckDB ignores an integer's precision and zeros pad a left-justified value
        flags = _TR.choice(['', '-', '0', '+', '-0', '0-', '+0', ' 0'])
        if _TR.random() < .7:
            spec = f"%{flags}{_TR.choice(['', '5', '8'])}{_TR.choice(['', '.', '.2'])}{_TR.choice(['d', 'i'])}"
            return f"select t.b, printf('{spec}', t.a * {_TR.choice([1, 1000, 1000003])}) from t"
        spec = f"%{flags}{_TR.choice(['', '9'])}{_TR.choice(['', '.2'])}f"
        return f"select t.b, printf('{spec}|', t.a * 0.25) from t"
    if k < .9:  # a NULL option is the default (it was a NULL result); an option's name is
        # exact ('FORWARD_SLASH' and '@' are the default, both slashes: sluice lower-cased it)
        opt = _TR.choice(["NULL", "NULL, NULL", "true, NULL", "NULL, 'backslash'", "NULL::varchar",
                          "'FORWARD_SLASH'", "'Backslash'", "'@'", "'forward_slash'", "false, 'SYSTEM'",
                          "'true', 'system'", "'T', NULL"])  # (a string trim option is a BOOLEAN)
        fn = _TR.choice(["parse_filename", "parse_dirname", "parse_dirpath", "parse_path"])
        opt = opt if fn == "parse_filename" else opt.split(",")[-1].strip()
        path = _TR.choice(["'/x.y'", r"'\x/y.z'", r"'/a\b'"])
        return f"select t.s, {fn}(t.s || {path}, {opt}) from t"
    if _TR.random() < .5:  # TRY: NULL on exactly the rows that fail (overflow, casts, //), no other
        x = _TR.choice(["t.b * t.b * t.b", "t.a::tinyint * 100::tinyint", "cast(t.s as integer)", "t.s::int + t.a",
                        "t.b // (t.a - 2)", "cast(t.f as integer)", "case when t.a > 3 then t.b * 100000000000000 end",
                        "coalesce(t.s::date, t.dt)", "regexp_extract_all(t.s, '[a-e]*')"])
        if _TR.random() < .5:
            return f"select t.b, try({x}) from t"
        return f"select t.b, t.a from t where try({x}) is {_TR.choice(['', 'not '])}null"
    return state_query()


_HR = random.Random(110_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


def binned_histogram_query():  # HISTOGRAM(x, bins): counts per bin in a MAP, the type's largest key above them
    x = _HR.choice(["t.a", "t.b", "t.f", "t.d", "t.g", "t.s", "t.a::smallint"])
    if x == "t.s":
        bins = _HR.sample(["'a'", "'apple'", "'c'", "'date'", "''", "'zz'"], _HR.randint(0, 4))
    else:
        bins = [str(_HR.choice([-1000, -5, 0, 1, 3, 7, 12, 50, 100000, 2.5, -0.5, 3000000000])) for _ in range(_HR.randint(0, 5))]
    return f"select t.g, histogram({x}, [{', '.join(bins)}]) from t where {pred('t')} group by t.g"


def state_query():
    if _HR.random() < .3: return binned_histogram_query()
    # an aggregate's state (DuckDB) is not its value: printed as DuckDB prints it or refused; FINALIZE
    # of it is the value; COMBINE / COMBINE_AGGR merge states kept in a CTE (a state's own
    # fields must never show: a CAST or CONCAT of a state once printed sluice's STRUCT)
    agg = _TR.choice(['sum(t.a)', 'first(t.b order by t.b)', 'max(t.s)', 'count(*)', 'avg(t.a) filter (where t.a > 0)',
                      "string_agg(t.s, '-' order by t.s)", 'list(t.a order by t.a desc)', 'min(t.d)', 'count(t.f)',
                      'bool_and(t.a > 0)', 'bool_or(t.b < 0)', 'product(t.g)', 'var_samp(t.a)', 'stddev_pop(t.d)',
                      'avg(t.d)', 'sum(t.b) filter (where t.g = 1)', 'arg_min(t.s, t.b)', 'arg_max(t.a, t.f)'])
    k = _TR.random()
    if k < .3:
        return f"select t.g, finalize({agg} export_state), count(*) from t group by t.g"
    if k < .45:
        return f"select t.g, {agg} export_state from t group by t.g"
    use = _TR.choice(["({s})::varchar", "concat({s}, '|')", "({s})::varchar || 'x'", "{s} is null", "{s} = {s}",
                      "typeof({s})", "finalize({s})"])
    cte = f"with st as (select t.g, {agg} export_state s from t where {pred('t')} group by t.g)"
    if k < .65:
        return f"{cte} select st.g, {use.format(s='st.s')} from st"
    if k < .85:
        return f"{cte} select a.g, b.g, finalize(combine(a.s, b.s)) from st a, st b where a.g <= b.g"
    return f"{cte} select st.g % 2, finalize(combine_aggr(st.s)) from st group by st.g % 2"


_KR = random.Random(100_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


_JR = random.Random(130_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


def pair_on_query():  # an outer / SEMI / ANTI join whose ON holds subqueries reading both sides (by row ids)
    k = _JR.random()
    if k < .15:  # a correlated IN as a value: NULL-aware per outer row
        neg = _JR.choice(["", "not "])
        sub = _JR.choice(["select u.a from u where u.g = t.g", "select u.a from u where u.b > t.b",
                          "select u.a from u where u.s = t.s and u.g <> t.g"])
        return _JR.choice([f"select t.b, t.a {neg}in ({sub}) from t",
                           f"select t.b from t where t.g = 1 or t.a {neg}in ({sub})"])
    if k < .3:  # subqueries in an aggregate's FILTER or arguments
        sub = _JR.choice(["t.a < (select avg(u.a) from u where u.g = t.g)", "exists (select 1 from u where u.a = t.a)",
                          "t.a not in (select u.a from u where u.g = t.g)", "t.b > (select 100)"])
        agg = _JR.choice(["count(*)", "sum(t.b)", "min(t.s)", "avg(t.a)"])
        return f"select t.g, {agg} filter (where {sub}), sum(t.a + (select count(*) from u where u.g = t.g)) from t group by t.g"
    jt = _JR.choice(["left join", "right join", "full join", "semi join", "anti join"])
    sub = _JR.choice([
        "exists (select 1 from t t2 where t2.g = t.g and t2.a = u.a)",
        "not exists (select 1 from t t2 where t2.g = u.g and t2.b < t.b)",
        "u.a in (select t2.a from t t2 where t2.g = t.g)",
        "u.a not in (select t2.a from t t2 where t2.g = t.g)",
        "t.a in (select u2.a from u u2 where u2.s = u.s)",
        "u.b > (select min(t2.b) from t t2 where t2.a = t.a and t2.g = u.g)",
        "(select count(*) from u u2 where u2.a = t.a and u2.g = u.g) > 0",
        "t.a = u.a or exists (select 1 from u u2 where u2.g = t.g and u2.s = u.s)"])
    plain = _JR.choice(["", "t.g = u.g and ", "t.a < u.a and ", f"u.b < {_JR.randint(0, 40000)} and "])
    cols = "t.b, t.a" if jt in ("semi join", "anti join") else "t.b, u.b, u.a"
    q = f"select {cols} from t {jt} u on {plain}{sub}"
    if _JR.random() < .2:
        q = f"select count(*), sum(x.b) from ({q}) x"
    return q


def keyed_recursive_query():  # WITH RECURSIVE ... USING KEY (DuckDB's cte tests): keyed tables updated per iteration
    k = _KR.random()
    lim = _KR.randint(0, 6000)
    if k < .3:  # shortest distances: MIN per key; UNION: the keys whose distance fell go on
        m = _KR.choice([5, 7, 11])
        return (f"with recursive r(k, d) using key (k, min(d)) as (select t.a % {m}, t.b from t where t.a is not null "
                f"and t.b < {lim} union select (r.k * {_KR.randint(2, 5)} + u.g) % {m}, r.d + abs(u.a) from r join u "
                f"on u.g = r.k % 5 where u.a is not null) select * from r")
    if k < .55:  # UNION ALL: the step reads its own rows; every column aggregated (keys repeat)
        return (f"with recursive r(k, n, s, c) using key (k, max(n), sum(s), count(c)) as (select t.g, 0, t.b, t.a "
                f"from t where t.b < {lim} union all select k, n + 1, s % 1000, c from r where n < {_KR.randint(1, 5)}) "
                f"select k, n, s::bigint, c from r")
    if k < .8:  # the last value per key until it stops changing: NaN, -0.0 and NULL (IS DISTINCT FROM)
        e = _KR.choice(["f * 0", "abs(f)", "coalesce(f, -0.0)", "f", "round(f)", "-abs(f)", "nullif(f, f)"])
        return (f"with recursive r(k, f) using key (k) as (select t.g, max(t.f) from t where t.b < {lim} group by t.g "
                f"union select k, {e} from r) select * from r")
    # recurring.r: the keyed table as it stands when the step starts
    return (f"with recursive r(k, v) using key (k, min(v)) as (select t.g, t.b from t where t.b < {lim} union "
            f"select r.k, q.v - 1 from r join recurring.r q on q.k = (r.k + 1) % 5 where q.v > {lim - 50}) select * from r")


def _null_query():
    if _NR.random() < .3: return forms_query()
    k = _NR.random()
    arg = null_arg if _NR.random() < .6 else lazy_arg
    if k < .5:
        return f"select t.b, {', '.join(arg() for _ in range(_NR.randint(1, 3)))} from t" + \
            (f" where {_NR.choice(['NULL', pred('t'), f'{pred(chr(116))} or NULL', 'case when false then 1 // 0 = 1 else true end'])}"
             if _NR.random() < .4 else "")
    if k < .7:
        return f"select t.g, {_NR.choice(['count', 'min', 'max', 'sum'])}({arg()}) from t group by t.g"
    if k < .85:
        on = _NR.choice(["NULL", "t.a = u.a and NULL", "t.a = u.a or NULL", "t.g = u.g and u.a", "1"])
        return f"select t.b, u.b from t {_NR.choice(['join', 'left join', 'full join'])} u on {on}"
    return (f"select t.a, NULL as n from t where {pred('t')} {_NR.choice(['union all', 'union'])} "
            f"select u.a, {_NR.choice(['u.s', 'u.b', 'NULL', 'u.dt'])} from u")


# ASOF JOIN (issue 47) of t with u (or the empty e), from its own RNG: drawn before the other
# kinds, and when it is taken no other RNG moves, so a seed's other queries stay as they were.
# DuckDB picks any one of several right rows of equal keys and value, so a query shows only
# what every pick agrees on: the left side's columns, the right side's keys and value (a tied
# right row left unmatched by RIGHT / FULL has the same keys and value as the one picked).
_AR = random.Random(90_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
_ASOF_VALUES = [("b", "b"), ("d", "d"), ("dt", "dt"), ("f", "f"), ("a", "a"), ("a", "f"), ("b", "d"), ("g", "a"),
                ("f", "d"), ("s", "s")]
def _asof_pred(tab, keys=None, value=None):
    """A WHERE conjunct on t, or on the right side's keys and value alone (its other columns
    differ between the tied rows DuckDB picks from: DuckDB filters after the join, as sluice)."""
    if keys is None:
        return _AR.choice([f"{tab}.a > {_AR.randint(-3, 8)}", f"{tab}.s is not null", f"{tab}.g <> {_AR.randint(0, 4)}",
                           f"{tab}.f < {_AR.choice(['0', '50', 'null'])}", f"{tab}.b % 3 = 0", f"{tab}.dt >= date '1998-01-01'"])
    return _AR.choice([f"{tab}.{value} is not null", f"{tab}.{value} is null"]
                      + [f"{tab}.g <> {_AR.randint(0, 4)}"] * ("g" in keys) + [f"{tab}.s <> 'apple'"] * ("s" in keys))
def asof_query():
    r = _AR
    right = "e" if r.random() < .05 else "u"
    kind = r.choice(["", "", "left ", "left ", "right ", "full ", "semi ", "anti "])
    keys = r.choice([[], ["g"], ["a"], ["s"], ["g", "s"], ["a", "g"], ["g", "dt"]])
    lv, rv = r.choice(_ASOF_VALUES)
    op = r.choice([">=", ">", "<=", "<"])
    if lv in keys or rv in keys:
        keys = [k for k in keys if k not in (lv, rv)]
    on = None
    if kind.strip() not in ("right", "full") and lv == rv and op == ">=" and r.random() < .3:
        on = f"using ({', '.join(keys + [lv])})"  # the last column is the inequality
    if on is None:
        conds = [f"t.{k} {'is not distinct from' if r.random() < .15 else '='} {right}.{k}" for k in keys]
        if kind.strip() not in ("right", "full") and r.random() < .3:  # one side's conditions (before the pick)
            conds.append(_asof_pred(r.choice(["t", right])))
        if kind.strip() not in ("right", "full") and r.random() < .2:  # reading both: the nearest passing row
            conds.append(r.choice([f"t.b + {right}.b < {r.randint(0, 100000)}", f"t.s <> {right}.s",
                                   f"(t.b + {right}.b) % {r.randint(2, 5)} = 0", f"t.g + {right}.a > {r.randint(0, 8)}"]))
        ineq = f"t.{lv} {op} {right}.{rv}" if r.random() < .7 else \
            f"{right}.{rv} {dict(zip(['>=', '>', '<=', '<'], ['<=', '<', '>=', '>']))[op]} t.{lv}"
        conds.insert(r.randrange(len(conds) + 1), ineq)
        on = "on " + " and ".join(conds)
    src = f"t asof {kind}join {right} {on}"
    where = ""
    if r.random() < .3:
        where = f" where {_asof_pred(right, keys, rv) if r.random() < .4 and kind.strip() not in ('semi', 'anti') else _asof_pred('t')}"
    if kind.strip() in ("semi", "anti"):
        return f"select t.b, t.{lv} from {src}{where}"
    shown = ", ".join([f"{right}.{k}" for k in keys] + [f"{right}.{rv}"])
    if r.random() < .3:
        return (f"select t.g, count(*), count({right}.{rv}), min({right}.{rv}), max({right}.{rv}) "
                f"from {src}{where} group by t.g")
    return f"select t.b, t.{lv}, {shown} from {src}{where}"


_CR = random.Random(90_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
_TEXT_TYPES = ["VARCHAR[]", "VARCHAR[][]", "INT[]", "BIGINT[][]", "STRUCT(a VARCHAR, b VARCHAR, c VARCHAR[])",
               "STRUCT(a INT, b VARCHAR)", "MAP(VARCHAR, VARCHAR)", "MAP(VARCHAR, INT[])", "STRUCT(a VARCHAR)[]"]
_TEXT_CHARS = "[]{}(),'\"\\ a1=:"


def _text_part():
    r = _CR.random()
    x = ("NULL" if r < 0.1 else "" if r < 0.2 else "".join(_CR.choice("ab1 -") for _ in range(_CR.randint(1, 4)))
         if r < 0.6 else "".join(_CR.choice(_TEXT_CHARS) for _ in range(_CR.randint(1, 5))))
    r = _CR.random()
    if r < 0.3: return '"' + x.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if r < 0.45: return "'" + x.replace("'", "\\'") + "'"
    return x


def _text_value(depth=2):
    """Text of a LIST, STRUCT or MAP with quotes, escapes, blanks and nesting (a character changed at times)."""
    sp = lambda: _CR.choice(["", "", " ", "  ", "\t"])
    g = _CR.randrange(3)
    if g == 0:
        items = [_text_value(depth - 1) if depth > 0 and _CR.random() < 0.5 else _text_part() for _ in range(_CR.randint(0, 3))]
        t = "[" + sp() + ("," + sp()).join(i + sp() for i in items) + "]"
    elif g == 1:
        t = "{" + ", ".join(sp() + f + sp() + ":" + sp() + (_text_value(depth - 1) if f == "c" and depth > 0 else _text_part())
                            for f in _CR.sample(["a", "b", "c"], _CR.randint(0, 3))) + "}"
    else:
        keys = dict.fromkeys(_text_part() for _ in range(_CR.randint(0, 3)))
        t = "{" + ", ".join(sp() + k + sp() + "=" + sp() + _text_part() for k in keys) + "}"
    if t and _CR.random() < 0.2:
        i = _CR.randrange(len(t))
        t = t[:i] + _CR.choice(_TEXT_CHARS) + t[i + 1:]
    return t


def text_cast_query():
    """CAST / TRY_CAST of text to LIST / STRUCT / MAP (DuckDB's reading of quotes, escapes, blanks and
    brackets): a random text constant, or ev's nested columns as text (changed at times) read back;
    or nested values where string functions meet them (CONCAT([42]) is a list in DuckDB, not its text)."""
    if _CR.random() < 0.15:
        f = _CR.choice(["concat(tags)", "concat(user, kind)", "concat_ws(',', tags, scores)", "user.address || 'x'",
                        "string_agg(tags::varchar, ';' order by event_id)", "concat(attrs)", "concat(scores, scores)"])
        return f"select {f} from ev" if "string_agg" in f else f"select event_id, {f} from ev order by event_id"
    if _CR.random() < 0.6:
        lit = _text_value().replace("'", "''")
        fn = "cast" if _CR.random() < 0.15 else "try_cast"
        return f"select {fn}('{lit}' as {_CR.choice(_TEXT_TYPES)}) as v"
    col, typ = _CR.choice([("tags", "VARCHAR[]"), ("scores", "BIGINT[]"), ("tags", "VARCHAR[][]"),
                           ("items", "STRUCT(sku VARCHAR, qty INT, price DECIMAL(10,2))[]"),
                           ("user.address", "STRUCT(city VARCHAR, zip BIGINT)"), ("attrs", "MAP(VARCHAR, BIGINT)"),
                           ("attrs", "MAP(VARCHAR, VARCHAR)")])
    text = _CR.choice([f"{col}::VARCHAR", f"replace({col}::VARCHAR, ',', ' ,')", f"replace({col}::VARCHAR, ' ', '')",
                       f"replace({col}::VARCHAR, '''', '\"')"])
    return f"select event_id, try_cast({text} as {typ}) as v from ev order by event_id"


_LAST_SIM = False
_LAST_NULL = False
_DR = random.Random(140_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


def distinct_limit_query():
    """DISTINCT / GROUP BY without aggregates under a LIMIT and no ORDER BY stop once they hold
    enough groups (any groups answer): how many came, and that none came twice, must be
    DuckDB's -- under every setting (tiny chunks merge pages along the way, spills partition)."""
    keys = _DR.sample(["t.s", "t.g", "t.a", "t.dt", "upper(t.s)", "t.a % 3", "t.d"], _DR.randint(1, 2))
    cols = ", ".join(f"{k} as c{i}" for i, k in enumerate(keys))
    inner = (f"select distinct {cols} from t" if _DR.random() < .6 else
             f"select {cols} from t group by {', '.join(keys)}")
    if _DR.random() < .5:
        inner += f" where {_DR.choice(['t.a > 2', 't.s like ' + repr('%a%'), 't.g = 1', 't.d is not null'])}"
    inner += f" limit {_DR.choice([0, 1, 3, 10, 40, 1000])}" + (f" offset {_DR.randint(1, 5)}" if _DR.random() < .3 else "")
    key = " || '|' || ".join(f"coalesce(cast(x.c{i} as varchar), '-')" for i in range(len(keys)))
    return f"select count(*), count(distinct {key}) from ({inner}) x"


def sparse_topk_query():
    """ORDER BY a key NULL in almost every row LIMIT k (table sp): the NULL rows fill the places
    the values leave, in the later keys' order -- under every setting (tiny chunks cut each)."""
    key = _TKR.choice(["sp.x", "sp.s", "sp.f", "sp.x + sp.g", "upper(sp.s)"])
    order = f"{key}{_TKR.choice(['', ' desc'])}{_TKR.choice(['', ' nulls first', ' nulls last'])}"
    where = _TKR.choice(["", " where sp.g <> 1", " where sp.id % 7 <> 3"])
    return (f"select {key}, sp.id from sp{where} order by {order}, sp.id{_TKR.choice(['', ' desc'])} "
            f"limit {_TKR.choice([1, 3, 10, 25, 60])}" + (f" offset {_TKR.randint(1, 5)}" if _TKR.random() < .2 else ""))


_BR = random.Random(150_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))
_LAST_BOOL = False
_BOOL_ARGS = ["t.a > 2", "t.s like '%a%'", "t.f = t.f", "t.d is null", "t.g = 1 or t.a < 0", "not (t.b > 5000)",
              "cast(NULL as boolean)", "true", "t.dt > date '1998-01-01'"]
_BOOL_AGGS = ["sum", "avg", "count", "min", "max", "bool_and", "bool_or", "product", "var_pop", "var_samp",
              "stddev", "skewness", "kurtosis", "median", "mode", "any_value", "count_if", "entropy",
              "string_agg", "list", "arg_min", "sum_no_overflow", "fsum", "bit_and", "histogram", "approx_count_distinct"]


def bool_agg_query():
    """Aggregates of booleans: DuckDB binds only some (SUM, MIN / MAX, BOOL_AND ...) and rejects the rest
    (AVG, PRODUCT, the moments); where DuckDB rejects, sluice must reject too (it once answered AVG of
    booleans with TRUE as 1), and where it answers, the answers must agree."""
    aggs = []
    for _ in range(_BR.randint(1, 3)):
        f, x = _BR.choice(_BOOL_AGGS), _BR.choice(_BOOL_ARGS)
        # (STRING_AGG, LIST and ANY_VALUE ordered by their argument: without, the answer depends on
        # the rows' order, which ranks and spills change -- false differences, not wrong answers)
        aggs.append(f"{f}({x}, t.b)" if f == "arg_min" else f"{f}({x}, ',' order by {x})" if f == "string_agg"
                    else f"{f}({x} order by {x})" if f in ("list", "any_value")
                    else f"{f}(distinct {x})" if _BR.random() < .15 else f"{f}({x})")
    if _BR.random() < .5:
        return f"select t.g, {', '.join(aggs)} from t group by t.g order by t.g"
    return f"select {', '.join(aggs)} from t" + (" where t.a > 100" if _BR.random() < .2 else "")


_BAR = random.Random(160_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


def bit_aggregate_query():  # BIT_AND / BIT_OR / BIT_XOR of n's integers (their ends, the sign bit), merged states
    aggs = ", ".join(f"{_BAR.choice(['bit_and', 'bit_or', 'bit_xor'])}({_BAR.choice(['', 'distinct '])}"
                     f"{_BAR.choice(['n.i8', 'n.i16', 'n.i64', 'n.o', 'cast(n.i16 as integer)'])})"
                     for _ in range(_BAR.randint(1, 3)))
    where = _BAR.choice(["", " where n.k > 0", " where n.i64 < 0", " where n.k > 9"])
    if _BAR.random() < .5:
        return f"select n.k, {aggs} from n{where} group by {_BAR.choice(['n.k', 'rollup(n.k)'])}"
    return f"select {aggs} from n{where}"


_AVR = random.Random(170_000 + (int(ARGS[1]) if len(ARGS) > 1 else 0))


def timestamp_average_query():
    """AVG of dd's timestamps (years before 1 to past 9999: the exact 96-bit sum, DuckDB's rounding)
    by group and filtered, and HAVING naming a select-list alias that is no group key."""
    x = _AVR.choice(["dd.ts", "cast(dd.ts as timestamptz)", "dd.ts + interval 1 day"])
    where = _AVR.choice(["", " where dd.i % 3 = 0", " where dd.ts > timestamp '1970-01-01'", " where dd.i > 100"])
    if _AVR.random() < .3:
        return (f"select dd.i % 4 as k, avg({x}) as i from dd{where} group by dd.i % 4 "
                f"having i {_AVR.choice(['>', '<'])} timestamp '1990-01-01' order by k")
    if _AVR.random() < .5:
        return f"select dd.i % {_AVR.randint(1, 6)} as k, avg({x}), count(*) from dd{where} group by k order by k"
    return f"select avg({x}), min({x}) from dd{where}"


_CUT_COLS = ["x", "f", "r", "s", "d", "dec", "b", "big"]
_CUT_CONST = {"x": ["7", "40", "-40", "41", "7.5", "6.5", "40.0", "'nan'"], "f": ["0", "-0.0", "'nan'", "'inf'", "'-inf'", "49.9", "1e308"],
              "r": ["16777217", "16777216", "0.1", "-1.5", "'nan'"], "s": ["''", "'a'", "'abcdefgh'", "'zz'", "'~'", "'\u00e9'"],
              "d": ["date '2000-01-01'", "'2000-12-31'", "timestamp '2000-06-01 12:00:00'", "date '2000-04-20'"],
              "dec": ["0", "99.99", "-99.99", "1.505", "100", "0.5::double"], "b": ["true", "false"],
              "big": ["9007199254740993", "9007199254740992.0", "9223372036854775807", "-9223372036854775808", "5"]}


def cut_query():
    """Queries whose answer an early cut could change over ct / cf: ORDER BY c LIMIT k (any NULL
    placement, k below and above a chunk's quarter, OFFSET), MIN / MAX by group, comparisons
    with constants at the statistics' edges, joins on a few keys, DISTINCT ... LIMIT."""
    tab = _XR.choice(["ct", "ct", "cf"])
    c = _XR.choice(_CUT_COLS)
    w = _XR.choice(_CUT_COLS)  # a comparison with a constant at the statistics' edges, or none
    where = "" if _XR.random() < .5 else \
        f" where {tab}.{w} {_XR.choice(['=', '<', '<=', '>', '>=', '<>'])} {_XR.choice(_CUT_CONST[w])}"
    k = _XR.choice(["top", "top", "minmax", "count", "join", "distinct", "wide"])
    if k == "wide":  # a SUM past 64 bits printed, or ordered / grouped / compared by (refused: it computed with zeros)
        sums = f"(select {tab}.g, {tab}.b, sum({tab}.hv) s from {tab}{where} group by {tab}.g, {tab}.b) q"
        return _XR.choice([f"select * from {sums} order by q.g, q.b limit {_XR.choice([1, 3, 30])}",
                           f"select * from {sums} order by q.s desc, q.g, q.b limit {_XR.choice([1, 3, 30])}",
                           f"select count(distinct q.s), max(q.s) from {sums}", f"select q.s, count(*) from {sums} group by q.s",
                           f"select q.g, q.b, rank() over (order by q.s) from {sums}"])
    if k == "top":
        order = _XR.choice(["", " desc", " nulls first", " desc nulls first", " nulls last", " desc nulls last"])
        lim = f" limit {_XR.choice([1, 3, 10, 60, 200, 700])}" + (f" offset {_XR.randint(1, 300)}" if _XR.random() < .3 else "")
        return f"select {tab}.{c}, {tab}.i from {tab}{where} order by {tab}.{c}{order}, {tab}.i{lim}"
    if k == "minmax":
        args = ", ".join(f"{_XR.choice(['min', 'max'])}({tab}.{_XR.choice(_CUT_COLS)})" for _ in range(_XR.randint(1, 2)))
        if _XR.random() < .4:
            return f"select {args}, count(*) from {tab}{where}"
        key = _XR.choice(["g", "b", "s", "x", "f"])
        return f"select {tab}.{key}, {args} from {tab}{where} group by {tab}.{key}"
    if k == "count":
        return f"select count(*), sum({tab}.i) from {tab}{where or f' where {tab}.{c} = {_XR.choice(_CUT_CONST[c])}'}"
    if k == "join":
        key = _XR.choice(["x", "d", "dec", "big"])
        jt = _XR.choice(["join", "left join", "right join"])
        return (f"select count(*), sum({tab}.i), count(q.i) from {tab} {jt} (select * from ct where ct.i % 331 = "
                f"{_XR.randint(0, 330)}) q on {tab}.{key} = q.{key}{where}")
    return f"select count(*) from (select distinct {tab}.{c} from {tab}{where} limit {_XR.choice([1, 5, 30, 3000])}) q"


def query():
    global _LAST_SIM, _LAST_NULL, _LAST_BOOL
    _LAST_BOOL = _BR.random() < 0.03  # (its own RNG: the other queries of a seed are unchanged)
    if _LAST_BOOL: return bool_agg_query()
    if _BAR.random() < 0.03: return bit_aggregate_query()
    if _AVR.random() < 0.03: return timestamp_average_query()
    if _XR.random() < 0.05: return cut_query()
    _LAST_NULL = _NR.random() < 0.06  # (its own RNG: the other queries of a seed are unchanged)
    if _LAST_NULL: return null_query()
    _LAST_SIM = _SR.random() < 0.06  # (its own RNG: the other queries of a seed are unchanged)
    if _LAST_SIM: return similarity_query()
    if _NR.random() < 0.08: return nested_query()
    if _CR.random() < 0.05: return text_cast_query()
    if _TR.random() < 0.04: return sqltests_query()
    if _KR.random() < 0.04: return keyed_recursive_query()
    if _WR.random() < 0.04: return row_subquery_query() if _WR.random() < .75 else right_using_query()
    if _JR.random() < 0.04: return pair_on_query()
    if _DR.random() < 0.03: return distinct_limit_query()
    if _TKR.random() < 0.06: return sparse_topk_query()
    if R.random() < 0.08: return narrow_query()
    if R.random() < 0.06: return mixed_compare_query()
    if R.random() < 0.04: return like_query()
    if R.random() < 0.03: return string_minmax_query()
    if R.random() < 0.06: return minmax_query()
    if R.random() < 0.3: return query4()
    if R.random() < 0.35: return query3()
    if R.random() < 0.4: return query2()
    k = R.random()
    if k < 0.25:  # projection + filter (+order/limit)
        sel = ", ".join(numexpr("t") if R.random()<.6 else strexpr("t") for _ in range(R.randint(1, 3)))
        q = f"select {sel} from t where {pred('t')}"
        if R.random() < .3: q = f"select t.b, {sel} from t where {pred('t')} order by 2 desc nulls first, t.b limit {R.randint(0,20)}"
        elif R.random() < .5:  # a top-k on a scan column: its k-th key bounds the scan (topk_filters)
            q = (f"select t.b, {sel} from t where {pred('t')} order by t.b {R.choice(['', 'desc', 'asc nulls last'])} "
                 f"limit {R.randint(0, 20)}" + (f" offset {R.randint(1, 5)}" if R.random() < .3 else ""))
        if R.random() < .2: q = f"with x as ({q}) select count(*), count(distinct x.b) from x"
        return q
    if k < 0.5:  # group by
        keys = R.sample(["t.g", "t.s", "t.a", "t.dt", "(t.a % 3)", "t.a > 2", "upper(t.s)", "extract(year from t.dt)", "t.d",
                         "t.a + 1", "t.g * 2 - 1"], R.randint(0, 3))  # (keys from another key: dependent_group_keys)
        aggs = ", ".join(agg("t") for _ in range(R.randint(1, 3)))
        if R.random() < .2:  # sums of one narrow column plus constants (the sum_offsets rule)
            c = "t.g"
            aggs += ", " + ", ".join(f"sum({c} {R.choice(['+', '-'])} {R.randint(-5, 40)})" for _ in range(R.randint(2, 3)))
        q = f"select {', '.join(keys + [aggs])} from t"
        if R.random() < .6: q += f" where {pred('t')}"
        if keys: q += f" group by {', '.join(keys)}"
        if keys and R.random() < .3: q += f" having {R.choice(['count(*) > 3', 'sum(t.b) > 10000', 'min(t.a) is null', 'max(t.d) < 500'])}"
        return q
    if k < 0.7:  # joins
        jt = R.choice(["join", "left join", "right join", "full join"])
        on = R.choice(["t.a = u.a", "t.g = u.g", "t.a = u.g and t.s = u.s", "t.s = u.s", "t.a = u.a and t.b < u.b", "t.g = u.a + 1",
                       # ON conjuncts on one side alone: push_filters moves those on the
                       # null-extended side below an outer join, the others stay in it
                       f"t.a = u.a and {pred('u')}", f"t.g = u.g and {pred('t')}",
                       f"t.a = u.a and {pred('t')} and {pred('u')}"])
        if R.random() < .15:  # a WHERE over a run of inner joins below an outer join (filters_into_join_runs)
            return (f"select t.g, count(*), sum(u.b), max(t2.s) from t join u on {on} {jt} t t2 on t2.g = u.g and "
                    f"{pred('t2')} where {pred(R.choice(['t', 'u', 't2']))} and {pred(R.choice(['t', 'u']))} group by t.g")
        if R.random() < .4:
            return f"select t.g, u.g, count(*), sum(t.b), max(u.d) from t {jt} u on {on}" + (f" where {pred(R.choice(['t','u']))}" if R.random()<.5 else "") + " group by t.g, u.g"
        return f"select t.b, u.b, t.s, u.a from t {jt} u on {on}" + (f" where {pred(R.choice(['t','u']))}" if R.random()<.5 else "")
    if k < 0.8:  # subqueries
        s = R.choice([
            f"select t.b from t where t.a in (select u.a from u where {pred('u')})",
            f"select t.b from t where t.a not in (select u.a from u where {pred('u')})",
            f"select t.b from t where exists (select 1 from u where u.g = t.g and {pred('u')})",
            f"select t.b from t where not exists (select 1 from u where u.a = t.a and {pred('u')})",
            # the outer side smaller: it builds and is emitted (build semi / anti), the subquery's
            # scan is filtered by its keys
            f"select u.b, u.s from u where exists (select 1 from t where t.g = u.g and t.a <> u.a and {pred('t')})",
            f"select u.b from u where not exists (select 1 from t where t.a = u.a and {pred('t')})",
            f"select u.b from u where u.a not in (select t.a from t where {pred('t')})",
            f"select t.b, (select max(u.b) from u where u.g = t.g) from t where {pred('t')}",
            "select t.b from t where t.b > (select avg(u.b) from u where u.a = t.a)",
            f"select t.b from t where {pred('t')} or t.a in (select u.g from u)",
        ])
        return s
    if k < 0.9:  # windows
        w = R.choice(["row_number() over (partition by t.g order by t.b)", "rank() over (partition by t.s order by t.a)",
                      "dense_rank() over (order by t.g)", "sum(t.b) over (partition by t.g)", "sum(t.a) over (partition by t.g order by t.b)",
                      "min(t.d) over (partition by t.s)", "count(t.a) over (partition by t.g order by t.b rows between 2 preceding and current row)",
                      "lag(t.a) over (partition by t.g order by t.b)", "lead(t.s, 2) over (order by t.b)", "avg(t.f) over (partition by t.g)",
                      # global windows that carry across ranks (exec/window_carry.py: ranges of the
                      # ORDER BY keys, ties on one rank, earlier ranks' totals added)
                      "rank() over (order by t.g)", "dense_rank() over (order by t.s desc nulls first)",
                      "percent_rank() over (order by t.a desc)", "cume_dist() over (order by t.dt nulls first)",
                      "sum(t.a) over (order by t.g)", "avg(t.d) over (order by t.a nulls first)", "count(*) over (order by t.s)",
                      "min(t.dt) over (order by t.g desc)", "max(t.b) over (order by t.a)", "count(t.d) over (order by t.dt desc)"])
        return f"select t.b, {w} from t" + (f" where {pred('t')}" if R.random()<.5 else "")
    # set ops
    op = R.choice(["union", "union all", "except", "intersect"])
    return f"select t.a, t.s from t where {pred('t')} {op} select u.a, u.s from u where {pred('u')}"

CFG = [{}, {"chunk_rows": 7}, {"force_spill": True, "chunk_rows": 16}, {"scan_mode": "staging", "chunk_rows": 5}, {"scan_mode": "pushdown"},
       {"host_memory_limit": 4 << 20, "chunk_rows": 3},
       # on demand: row groups read after a top-k bound is known meet it
       {"chunk_rows": 10, "prefetch": False}, {"chunk_rows": 10, "prefetch": False, "scan_mode": "pushdown"},
       # the torch decoder (pages of every scheme above), also on a row selection
       {"decoder": "device"}, {"decoder": "device", "scan_mode": "staging", "chunk_rows": 5},
       # value checks deferred to the query's end, as on a GPU (kernels/checks.py; this process
       # only: the --ranks pass runs RANK_CFG in its own workers), and runtime filters built the
       # GPU's way (exec/runtime_filter.py)
       {"_defer_checks": True}, {"_defer_checks": True, "chunk_rows": 7},
       # decimals through pyarrow's decimal128 (no footer rewrite)
       {"integer_decimals": False},
       # filters conjunct by conjunct over the rows still in, on chunks of any size (the
       # threshold is 4096 rows), and every conjunct over every row
       {"_selective_rows": 1}, {"_selective_rows": 1, "scan_mode": "pushdown"}, {"selective_filters": False},
       # COUNT(DISTINCT string) grouped like any DISTINCT aggregate
       {"distinct_counts": False, "chunk_rows": 7},
       # row groups read whole however the MIN / MAX bound stands
       {"minmax_bounds": False, "chunk_rows": 7},
       # string MIN / MAX's first-byte pass on every chunk (it needs 4096 rows, 16 per group)
       {"_first_byte": True}, {"_first_byte": True, "chunk_rows": 7},
       # loaded read tasks merged into larger chunks (coalesce_rows: on a GPU by default), every
       # merge waiting for the tasks in flight and taking string columns of any dictionary
       {"_coalesce": True, "chunk_rows": 7, "coalesce_rows": 60},
       {"_coalesce": True, "chunk_rows": 7, "coalesce_rows": 100, "scan_mode": "auto", "adapt_min_slices": 1},
       # decoded columns kept across the connection's queries (io/column_cache.py: on a GPU by
       # default): served to later queries, concatenated across task shapes, and -- at 64 KiB,
       # or under a 4 MiB budget -- evicted all the time; with each decoder and row selection
       {"column_cache_bytes": 64 << 20, "chunk_rows": 7},
       {"column_cache_bytes": 64 << 10, "chunk_rows": 5, "scan_mode": "staging"},
       {"column_cache_bytes": 64 << 20, "decoder": "device", "scan_mode": "pushdown"},
       {"column_cache_bytes": 64 << 20, "host_memory_limit": 4 << 20, "chunk_rows": 3}]
cons = [sluice.connect(str(root), device="cpu", threads=2, **{k: v for k, v in c.items() if k[0] != "_"}) for c in CFG]
duck = duckdb_tables(root)  # in-memory tables: DuckDB reading Parquet drops NaN rows by statistics


def duck_fails_without_limit(q):
    """Whether DuckDB too raises on the query once its LIMIT is gone."""
    import re
    if not re.search(r" limit \d+$", q):
        return False
    try:
        duck.sql(re.sub(r" limit \d+$", "", q)).fetchall()
        return False
    except Exception:  # duckdb.Error
        return True


fails = 0
internal = 0
overflows = 0  # DuckDB raised an overflow where sluice answered (counted in fails too)
overflow_errors = 0  # both raised
dskip = 0
answered: list[tuple[str, pa.Table]] = []  # (query, DuckDB's answer) for the ranks pass
for i in range(N):
    asof = _AR.random() < 0.06  # (its own RNG, as the next line's)
    extreme = not asof and _QR.random() < 0.05  # (its own RNG: R draws this seed's other queries as before)
    _LAST_BOOL = False
    q = asof_query() if asof else quantile_query() if extreme else query()
    rr = _QR if extreme else R
    try:
        theirs = duck.sql(q).arrow()
        theirs = theirs.read_all() if hasattr(theirs, 'read_all') else theirs
    except Exception as e:
        if "Out of Range" in str(e) or "Overflow" in str(e):  # an overflow must be sluice's error too
            theirs = e
        elif "Subquery returns" in str(e):  # ANY / ALL over two columns: sluice must refuse too (it answered)
            theirs = e
        elif _LAST_BOOL and "Binder Error" in str(e):  # an aggregate DuckDB does not bind for booleans
            theirs = e
        else:
            dskip+=1
            if '-v' in sys.argv: print('DUCK', str(e).splitlines()[0][:120])
            continue
    try:
        rng = _AR if asof else _BR if _LAST_BOOL else _NR if _LAST_NULL else _SR if _LAST_SIM else R  # (settings from the query's own RNG too)
        ci = rng.randrange(len(cons))
        if " from m" in q and rng.random() < .6:  # MIN / MAX only: where tasks are read after the bound is known
            ci = rng.choice([j for j, c in enumerate(CFG) if c.get("prefetch") is False])
        elif ("min(" in q or "max(" in q) and rng.random() < .3:  # string MIN / MAX's first-byte pass
            ci = rng.choice([j for j, c in enumerate(CFG) if c.get("_first_byte")])
        con = cons[ci]
        checks.DEFER_ON_CPU = bool(CFG[ci].get("_defer_checks"))
        # (and the runtime filters' build statistics and keys read back at publish, as on a GPU:
        # with tiny chunks, the keys cross to the host a few chunks at a time)
        runtime_filter.DEFER_ON_CPU = bool(CFG[ci].get("_defer_checks"))
        runtime_filter.DEFER_FLUSH_BYTES = 64 if CFG[ci].get("chunk_rows") == 7 else FLUSH_BYTES
        reader_mod.WAIT_TO_COALESCE = bool(CFG[ci].get("_coalesce"))
        reader_mod.MERGE_ROWS_PER_ENTRY = 0 if CFG[ci].get("_coalesce") else MERGE_ROWS
        selective.SELECTIVE_MIN_ROWS = CFG[ci].get("_selective_rows", SELECTIVE_ROWS)
        for name, value in (FIRST_BYTE_FORCED if CFG[ci].get("_first_byte") else FIRST_BYTE).items():
            setattr(string_prefix, name, value)
        ours = con.sql(q).to_arrow()
        if isinstance(theirs, Exception):  # DuckDB overflowed, sluice answered
            fails += 1; overflows += 1
            print("ANSWERED", CFG[ci], "DuckDB:", str(theirs).splitlines()[0][:150], "\n   ", q); continue
    except Exception as e:
        if isinstance(theirs, Exception) and isinstance(e, sluice.errors.ExecutionError):
            overflow_errors += 1; continue  # both raise
        if isinstance(theirs, Exception) and isinstance(e, sluice.errors.PlanError) and "one column" in str(e):
            overflow_errors += 1; continue  # both reject a subquery of several columns
        if isinstance(theirs, Exception) and _LAST_BOOL and isinstance(e, sluice.errors.PlanError):
            overflow_errors += 1; continue  # both reject an aggregate of booleans

        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        if msg.startswith("unsupported") or "unsupported" in msg[:40]:
            print("UNSUP", msg[:150], "|", q[:200]); continue
        if isinstance(e, sluice.errors.ExecutionError) and duck_fails_without_limit(q):
            continue  # DuckDB evaluates the select list after its top-N; SQL (and sluice) before it
        fails += 1
        if not isinstance(e, sluice.errors.SluiceError) or isinstance(e, sluice.errors.InternalError):
            internal += 1  # a bug by definition, whatever DuckDB said
        print("ERROR", CFG[ci], type(e).__name__, msg[:300], "\n   ", q); continue
    try:
        if hasattr(theirs, "read_all"): theirs = theirs.read_all()
        compare(ours, theirs)
        answered.append((q, theirs))
    except AssertionError as e:
        fails += 1
        print("WRONG", CFG[ci], str(e)[:400], "\n   ", q)

RANK_CFG = [{}, {"force_spill": True, "chunk_rows": 16, "broadcast_bytes": 0}, {"chunk_rows": 7, "exchange": "blocking"},
            {"broadcast_bytes": -1, "exchange": "chunked"}, {"host_memory_limit": 4 << 20, "chunk_rows": 3, "broadcast_bytes": 0},
            {"chunk_rows": 7, "coalesce_rows": 100},  # (merging what happens to be loaded: the workers do not wait)
            # one exchange's rows handed to its consumer round by round (every rank drains its rounds)
            {"exchange_receive": "pipelined", "broadcast_bytes": 0, "chunk_rows": 5, "exchange_batch_bytes": 256},
            {"exchange_receive": "pipelined", "force_spill": True, "chunk_rows": 16},
            # sorts and global windows by ranges of their keys, whatever the size (range_sort_rows)
            {"range_sort_rows": 0, "chunk_rows": 7}, {"range_sort_rows": 0, "force_spill": True, "exchange_receive": "pipelined"},
            # joins' hot keys (any value with a tenth of the sampled probe rows) kept on their rank,
            # their build rows sent to every rank (exec/hot_keys.py)
            {"hot_key_share": 0.1, "broadcast_bytes": 0, "chunk_rows": 7}]


def on_ranks(batch, ranks, cfg):
    from sluice.launch import run_job
    job = {"kind": "queries", "data": str(root), "queries": [q for q, _ in batch],
           "settings": {"device": "cpu", "dist_timeout_s": 60, **cfg}}
    return run_job(ranks, job)


if RANKS > 1:  # the same queries on several ranks: one job per batch, a query alone when its batch fails
    for b in range(0, len(answered), 40):
        batch, ranks, cfg = answered[b:b + 40], R.randint(2, RANKS), R.choice(RANK_CFG)
        try:
            results = on_ranks(batch, ranks, cfg)
        except Exception:
            results = []
            for item in batch:
                try:
                    results.append(on_ranks([item], ranks, cfg)[0])
                except Exception as e:
                    results.append(e)
        for (q, theirs), ours in zip(batch, results):
            if isinstance(ours, Exception):
                fails += 1
                print("ERROR ranks", ranks, cfg, str(ours)[:300], "\n   ", q); continue
            try:
                compare(ours, theirs)
            except AssertionError as e:
                fails += 1
                print("WRONG ranks", ranks, cfg, str(e)[:400], "\n   ", q)
print("done", N, "fails", fails, "internal", internal, "duck-rejected", dskip, "answered-overflow", overflows,
      "both-overflow", overflow_errors)
shutil.rmtree(root, ignore_errors=True)
