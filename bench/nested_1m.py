"""Every nested construct against DuckDB, side by side, over ``sluice datagen events`` at a
million events (issue 51: "a million events: no operator far slower than DuckDB"). Each query
answers small (an aggregate over the construct), so the time is the construct's, not the
transfer of a million nested rows; both answers are compared (sorted, floats rounded) and a
mismatch is printed as WRONG. Best of ``--runs`` runs each, both engines on ``--threads``.

    python bench/nested_1m.py DATA_DIR [--threads 2] [--runs 2] [--only SUBSTRING]
"""

from __future__ import annotations

import sys
import time
from decimal import Decimal
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sluice  # noqa: E402

QUERIES = [
    ("unnest in select", "select sum(x), count(*) from (select unnest(scores) as x from events)"),
    ("unnest, two in select", "select count(t), sum(s) from (select unnest(tags) as t, unnest(scores) as s from events)"),
    ("unnest in FROM (lateral)", "select count(*), sum(it.qty) from events e, unnest(e.items) as u(it)"),
    ("unnest lateral + group by", "select tag, count(*) from events, unnest(tags) as u(tag) group by tag"),
    ("list_transform", "select sum(list_sum(list_transform(scores, lambda x: x * 2))) from events"),
    ("list_filter", "select sum(len(list_filter(scores, lambda x: x > 500))) from events"),
    ("list_reduce", "select sum(list_reduce(scores, lambda a, x: a + x)) from events where len(scores) > 0"),
    ("list_reduce, initial", "select sum(list_reduce(scores, lambda a, x: a + x, 0)) from events"),
    ("list comprehension", "select sum(len([x for x in tags if x <> 'red'])) from events"),
    ("list_sort", "select sum(list_sort(scores)[1]), sum(list_sort(scores, 'DESC')[1]) from events"),
    ("list_distinct", "select sum(len(list_distinct(tags))) from events"),
    ("list aggregates", "select sum(list_sum(scores)), max(list_max(scores)), min(list_min(scores)), "
                        "round(sum(list_avg(scores)), 3) from events"),
    ("list_contains", "select count(*) from events where list_contains(tags, 'sale')"),
    ("l[i], slice, len", "select count(tags[1]), count(tags[-1]), sum(len(scores[2:3])) from events"),
    ("list_concat", "select sum(len(list_concat(tags, tags))) from events"),
    ("struct fields", "select user.address.city, count(*), sum(user.address.zip) from events group by 1"),
    ("struct_pack", "select count(distinct {'a': user.id, 'b': kind}) from events"),
    ("map lookup", "select sum(attrs['k1']), count(attrs['k9']) from events"),
    ("map_keys / values", "select sum(len(map_keys(attrs))), sum(list_sum(map_values(attrs))) from events"),
    ("element_at / cardinality", "select sum(cardinality(attrs)), count(element_at(attrs, 'k2')[1]) from events"),
    ("GROUP BY list", "select count(*) from (select tags, count(*) from events group by tags)"),
    ("DISTINCT struct", "select count(*) from (select distinct user from events)"),
    ("ORDER BY list, limit", "select event_id, tags from events order by tags, event_id limit 10"),
    ("ORDER BY struct", "select sum((event_id * r) % 1000003) from (select event_id, row_number() over () as r "
                        "from (select event_id from events order by user.address, event_id))"),
    ("JOIN on list", "select count(*) from events a join (select tags as t2, count(*) c from events "
                     "group by tags) g on a.tags = g.t2"),
    ("JOIN on struct", "select count(*) from events a join (select distinct user.address as ad from events "
                       "where event_id < 100000) g on a.user.address = g.ad"),
    ("compare list constant", "select count(*) from events where scores < [500]"),
    ("list(x order by)", "select kind, len(list(event_id order by event_id)), "
                         "list(event_id order by event_id desc)[1] from events group by kind"),
    ("list() of structs", "select kind, len(list(user)) from events group by kind"),
    ("unnest list of structs", "select sum(it.qty), sum(it.price) from (select unnest(items) as it from events)"),
]


def _norm(v):
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, Decimal):
        return round(float(v), 6)
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _norm(x)) for k, x in v.items()))
    return v


def _rows(table) -> list:
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return sorted((tuple(_norm(c[r]) for c in cols) for r in range(table.num_rows)), key=repr)


def main() -> None:
    data = sys.argv[1]
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 2
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 2
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    con = sluice.connect(data, device="cpu", threads=threads)
    duck = duckdb.connect()
    duck.execute(f"set threads to {threads}")
    duck.execute(f"create view events as select * from read_parquet('{Path(data) / 'events.parquet'}')")
    print("| construct | sluice | DuckDB | ratio | query |")
    print("|---|---|---|---|---|")
    for name, q in QUERIES:
        if only and only not in name:
            continue
        best, answers = [], []
        for run in (lambda: con.sql(q).to_arrow(), lambda: duck.sql(q).to_arrow_table()):
            times = []
            try:
                for _ in range(runs):
                    t0 = time.perf_counter()
                    out = run()
                    times.append(time.perf_counter() - t0)
            except Exception as exc:  # a refusal is a row of the table, not the end of the run
                out, times = f"error: {str(exc).splitlines()[0]}", [float("nan")]
            best.append(min(times))
            answers.append(out if isinstance(out, str) else _rows(out))
        verdict = "" if answers[0] == answers[1] else " WRONG"
        ratio = best[0] / best[1] if best[1] else float("inf")
        print(f"| {name} | {best[0]:.2f} s | {best[1]:.2f} s | {ratio:.1f}x{verdict} | `{q}` |", flush=True)
        if verdict:
            print(f"<!-- sluice {str(answers[0])[:300]} duckdb {str(answers[1])[:300]} -->", flush=True)


if __name__ == "__main__":
    main()
