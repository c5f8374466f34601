"""The translator's structural guarantee (sluice.sql.coverage): every sqlglot node type and
every argument is either translated or refused -- never silently dropped. Written against
sqlglot's own class list, so a new sqlglot release that adds a node type or an argument
fails here (and is refused at run time) instead of changing answers."""

from __future__ import annotations

import inspect

import pytest
from sqlglot import exp

from sluice.errors import UnsupportedError
from sluice.sql.coverage import SUPPORTED, check_supported
from sluice.sql.construct_names import construct_name
from sluice.sql.parse import parse_sql
from sluice.sql.expressions import HANDLERS
from sluice.sql.translate import AGG_FUNCS, HOLISTIC, WINDOW_FUNCS
from sluice.testing.queries import ssb_queries, tpch_queries


def _all_expression_classes() -> list[type]:
    seen: set[type] = set()
    stack = [exp.Expression]
    while stack:
        c = stack.pop()
        for sub in c.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    return sorted(seen, key=lambda c: c.__name__)


ALL = _all_expression_classes()
STRUCTURAL = {exp.Select, exp.Subquery, exp.Union, exp.Intersect, exp.Except, exp.With, exp.CTE, exp.From, exp.Join, exp.Table,
              exp.TableAlias, exp.Where, exp.Having, exp.Group, exp.Order, exp.Ordered, exp.Limit,
              exp.LimitOptions, exp.Offset, exp.Distinct, exp.Star, exp.Identifier, exp.DataType,
              exp.DataTypeParam, exp.Var, exp.Interval, exp.Window, exp.WindowSpec, exp.Qualify,
              exp.Rollup, exp.Cube, exp.GroupingSets, exp.Tuple, exp.Grouping,
              exp.Array, exp.ReadParquet, exp.ReadCSV, exp.Filter, exp.Values,
              exp.IgnoreNulls,  # read with the window it wraps
              exp.Unnest,  # read as a FROM item (sluice.sql.nested.UnnestSources)
              exp.Lateral,  # read by sluice.sql.dependent
              exp.Lambda, exp.Comprehension,  # read by the lambda calls and lists (sluice.sql.lambdas)
              exp.ColumnDef,  # a STRUCT type's field, read with its DataType (sluice.sql.literals.sql_type)
              exp.Columns}  # expanded as a select-list item or DISTINCT ON key (sluice.sql.select_list)


@pytest.mark.parametrize("cls", sorted(SUPPORTED, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_every_argument_is_decided(cls):
    """The table names exactly the arguments sqlglot defines: none undecided, none stale."""
    assert set(SUPPORTED[cls]) == set(cls.arg_types), (
        f"{cls.__name__}: undecided {sorted(set(cls.arg_types) - set(SUPPORTED[cls]))}, "
        f"stale {sorted(set(SUPPORTED[cls]) - set(cls.arg_types))}")


def _bare(cls) -> exp.Expression:
    node = cls.__new__(cls)
    exp.Expression.__init__(node)  # no arguments: the node type alone
    return node


def test_every_other_node_type_is_refused():
    refused = 0
    for cls in ALL:
        if cls in SUPPORTED or inspect.isabstract(cls):
            continue
        with pytest.raises(UnsupportedError) as ei:
            check_supported(_bare(cls))
        msg = str(ei.value)
        assert msg.startswith("unsupported: ") and len(msg) > len("unsupported: "), (cls, msg)
        refused += 1
    assert refused > 500  # sqlglot has ~1000 node types; sluice reads ~90 of them


@pytest.mark.parametrize("cls", sorted(SUPPORTED, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_refused_arguments_are_refused(cls):
    """Setting any argument the translator does not read makes the query refused."""
    for arg, rule in SUPPORTED[cls].items():
        node = _bare(cls)
        node.set(arg, exp.var("ZZZ"))
        if rule.kind in ("read", "same"):
            check_supported(node)  # the argument is read: its node alone is fine
            continue
        with pytest.raises(UnsupportedError):
            check_supported(node)


@pytest.mark.parametrize("cls", sorted(SUPPORTED, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_an_argument_sqlglot_may_add_is_refused(cls):
    node = _bare(cls)
    node.args["an_argument_from_a_future_release"] = exp.Literal.number(1)
    with pytest.raises(UnsupportedError):
        check_supported(node)


def test_translator_handlers_are_covered():
    """Every expression type the translator has a rule for is in the table, and every table
    entry is translated: by a handler, as an aggregate, or structurally by the query code."""
    handled = set(HANDLERS)
    assert handled <= set(SUPPORTED), sorted(c.__name__ for c in handled - set(SUPPORTED))
    unexplained = set(SUPPORTED) - handled - set(AGG_FUNCS) - set(HOLISTIC) - set(WINDOW_FUNCS) - STRUCTURAL
    assert not unexplained, sorted(c.__name__ for c in unexplained)


def test_benchmark_queries_pass_the_check():
    for sql in list(tpch_queries().values()) + list(ssb_queries().values()):
        check_supported(parse_sql(sql))


@pytest.mark.parametrize("sql,name", [
    ("select date_part(m, d) from t", "function DATE_PART"),
    ("select md5_number(s) from t", "function MD5_NUMBER"),
    ("select to_base64(x) from t", "function TO_BASE64"),
    ("select approx_count_distinct(x, 0.1) from t", "APPROX_COUNT_DISTINCT with an accuracy"),
    ("select my_udf(x) from t", "function MY_UDF"),
    ("select x from t intersect by name select x from t", "INTERSECT BY NAME"),
    ("select kurtosis(x) from t", "aggregate KURTOSIS"),
    ("select * from duckdb_tables()", "table function DUCKDB_TABLES"),
])
def test_names_as_written(sql, name):
    with pytest.raises(UnsupportedError) as ei:
        check_supported(parse_sql(sql))
    assert str(ei.value) == f"unsupported: {name}"
    assert construct_name  # the helper is public for the translator's own refusals
