"""WITH RECURSIVE ... USING KEY and recurring.<name> against DuckDB: a keyed table updated by
each iteration (the last row's value, or an aggregate over every row of the key so far), UNION
(the next iteration reads the keys whose row changed) and UNION ALL (the step's rows), graph
walks over TPC-H's nation, in one-row chunks and with spilling forced too; the key list's
errors and refusals."""

import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare

QUERIES = {
    # UNION: the step reads the keys that are new or whose row changed
    "last_value_per_key": "with recursive t(k, v) using key (k) as (select 1, 10 union "
                          "select k + 1, v + 10 from t where k < 4) select * from t",
    "same_row_ends_it": "with recursive t(k, v) using key (k) as (values (1, 0) union select k, v from t) table t",
    "payload_changes_one_column": "with recursive t(k, a, b) using key (k) as (values (1, 0, 0), (2, 0, 0) union "
                                  "select k, case when k = 1 then 1 else a end, case when k = 2 then b + 1 else b end "
                                  "from t where (k = 1 and a = 0) or (k = 2 and b < 2)) table t",
    "min_ignores_worse_candidates": "with recursive t(k, v) using key (k, min(v)) as (values (1, 5) union "
                                    "select k, v + delta from t, (values (0), (0), (1), (2)) offsets(delta)) table t",
    "sum_accumulates": "with recursive t(k, total) using key (k, sum(total)) as (values (1, 1::integer) union "
                       "select k, 1 from t where total < 3) select k, total::bigint from t",
    "several_aggregates": "with recursive t(k, total, n, lo, hi) using key (k, sum(total), count(n) as n, min(lo), "
                          "max(hi)) as (values (1, 1::bigint, 1::bigint, 10, 10), (1, 2::bigint, 1::bigint, 9, 11) "
                          "union select k, x, 1, x, x from t, (values (8), (12)) candidates(x) where n = 2) "
                          "select k, total::bigint, n, lo, hi from t",
    "avg_unchanged_stops": "with recursive t(k, v) using key (k, avg(v) as v) as (values (1, 0), (1, 2) union "
                           "select k, x from t, (values (0), (2)) values_(x)) table t",
    "aggregate_of_expression": "with recursive t(k, v) using key (k, min(abs(v)) as v) as (values (1, -5) union "
                               "select k + 1, -v from t where k < 2) table t",
    "null_payload_and_key": "with recursive t(k, v) using key (k) as (select null::int, 4 union "
                            "select null, 5 from t where v = 4) select * from t",
    "key_only": "with recursive t(k) using key (k) as (values (1) union select k from t) table t",
    "two_keys_strings": "with recursive t(a, b, s) using key (a, b) as (select 1, 'x', 'p' union "
                        "(select a + 1, b, s || 'q' from t where a < 4 union all select a, 'y', s from t where a = 2)) "
                        "select * from t",
    "many_keys_one_step": "with recursive t(k, v) using key (k) as (select i, 0::bigint from range(1, 101) r(i) "
                          "union (select k, 1 from t where v = 0 union all select k, v + 1 from t where k = 1 and "
                          "v in (1, 3) union all select i, 3 from t, range(1, 101) r(i) where t.k = 1 and t.v = 2)) "
                          "select count(*), sum(v)::bigint, max(v) from t",
    # UNION ALL: the step reads the rows the last one gave
    "union_all_reads_candidates": "with recursive t(k, v, n) using key (k) as (values (1, 1, 0), (1, 2, 0), "
                                  "(1, 3, 0) union all select k, v + 10, (select count(*) from t) from t "
                                  "where v < 10) table t",
    "union_all_all_key_columns": "with recursive t(k, v) using key (k, v) as (values (1, 5) union all "
                                 "select k, v + 1 from t where v < 7) table t",
    # shortest paths over a graph of nations: min(dist) per node
    "shortest_paths": "with recursive d(node, dist) using key (node, min(dist)) as (select 0, 0 union "
                      "select n.n_nationkey, d.dist + n.n_regionkey + 1 from d join nation n on "
                      "n.n_nationkey = (d.node * 3 + 1) % 25 or n.n_nationkey = (d.node + 7) % 25) select * from d",
    "reachable_count_by_region": "with recursive d(node, hops, region) using key (node, min(hops), max(region)) "
                                 "as (select n_nationkey, 0, n_regionkey from nation where n_nationkey < 2 union "
                                 "select n.n_nationkey, d.hops + 1, n.n_regionkey from d join nation n on "
                                 "n.n_regionkey = d.region and n.n_nationkey > d.node) "
                                 "select region, count(*), sum(hops) from d group by region",
    # recurring.<name>: every row so far
    "recurring_keyed": "with recursive t(k, v, n) using key (k) as (values (1, 1, 0), (1, 2, 0), (1, 3, 0) "
                       "union all select k, v + 10, (select count(*) from recurring.t) from t where v < 10) table t",
    "recurring_keyed_union": "with recursive t(k, v) using key (k) as (select 1, 0 union "
                             "select k + 1, 0 from recurring.t where k < 3) table t",
    "recurring_join": "with recursive t(k, v) using key (k) as (select n_nationkey, 0 from nation where "
                      "n_nationkey < 3 union select r.k, r.v + 1 from t join recurring.t r on r.k = t.k + 1 or "
                      "r.k = t.k where r.v < 3) select * from t",
    "recurring_union_all": "with recursive t(n, c) as (select 1, 0 union all select n + 1, "
                           "(select count(*) from recurring.t) from t where n < 5) table t",
    "recurring_union": "with recursive t(n, c) as (select 1, 0 union select n + 1, "
                       "(select count(*) from recurring.t) from t where n < 5) table t",
    # a keyed CTE that does not read itself: anchor UNION ALL step, aggregated once
    "not_recursive_aggregated": "with recursive t(k, v) using key (k, sum(v)) as (select 1, 4 union select 1, 5) "
                                "select k, v::bigint from t",
    # USING KEY outside WITH RECURSIVE is not read (DuckDB's)
    "without_recursive": "with t(k, v) using key (k) as (select 1, 2 union select 1, 3) select * from t",
}


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 1}, {"chunk_rows": 2, "force_spill": True}],
                         ids=["default", "one_row_chunks", "spilled"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_recursive_key(name, settings, tpch_dir, tpch_duck, connect):
    sql = QUERIES[name]
    compare(connect(tpch_dir, **settings).sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table(), None)


ERRORS = {
    "with recursive t(k, v) using key (k, avg(*)) as (select 1, 2 union all select 1, 3) table t":
        (PlanError, "column reference or an alias"),
    "with recursive t(k, v) using key (k as v) as (select 1, 2 union all select 1, 3) table t":
        (PlanError, "only direct calls to an aggregate"),
    "with recursive t(k, v) using key (k, sum(v) over ()) as (select 1, 2 union all select 1, 3) table t":
        (PlanError, "can't be used in the USING KEY clause"),
    "with recursive t(k, v) using key (k, min(v), max(v)) as (select 1, 2 union all select 1, 3) table t":
        (PlanError, "referenced multiple times"),
    "with recursive t(k, v) using key (k, min(k) as k) as (select 1, 2 union all select 1, 3) table t":
        (PlanError, "both key and aggregate"),
    "with recursive t(k, v) using key (min(v)) as (select 1, 2 union all select 1, 3) table t":
        (PlanError, "at least one key column"),
    "with recursive t(k, v) using key (k, max(v) as w) as (select 1, 2 union all select 1, 3) table t":
        (PlanError, "could not find column"),
    # order-dependent aggregates: their value would depend on the order rows arrive
    "with recursive t(k, v) using key (k, any_value(v)) as (select 1, 5 union all "
    "select k, v - 1 from t where v > 0) table t": (UnsupportedError, "ANY_VALUE in USING KEY"),
    "with recursive t(k, v) using key (k, string_agg(v, '') as v) as (select 1, 'a' union "
    "select k, v || 'b' from t where length(v) < 4) table t": (UnsupportedError, "in USING KEY"),
    # not reading itself, a column without an aggregate: which row is last is not defined
    "with recursive t(k, v) using key (k) as (select 1, 0 union all select 1, 5) table t":
        (UnsupportedError, "does not read itself"),
}


@pytest.mark.parametrize("sql", sorted(ERRORS))
def test_recursive_key_errors(sql, tpch_dir, tpch_duck, connect):
    cls, text = ERRORS[sql]
    with pytest.raises(cls, match=text):
        connect(tpch_dir).sql(sql).to_arrow()
