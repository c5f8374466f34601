"""ORDER BY and DISTINCT ON of a SELECT as keys over its projection: a position or a
select-list name is that output, an expression equal to an output is that output, any other a
hidden column. A mixin of :class:`sluice.sql.translate.Translator` (``st`` is its ``_Select``: the SELECT being translated)."""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr.nodes import Col, Expr


class OrderKeys:
    """Translator methods for ORDER BY and DISTINCT ON."""

    def _distinct_on(self, st) -> list[tuple[str, Expr]]:
        """DISTINCT ON (k): the keys, as hidden columns (the first row of each k in ORDER BY's
        order is kept by a row_number() window in ``_finish``); ``st.distinct`` is then None."""
        distinct = st.distinct = st.sel.args.get("distinct")
        if distinct is None or not distinct.args.get("on"):
            return []
        on = distinct.args["on"]
        by_alias = {u.lower(): e for u, _, e in reversed(st.outputs)}
        on_keys = []
        written = on.expressions if isinstance(on, exp.Tuple) else [on]
        for k in [c for w in written for c in (self._expand_columns(w, st.scope) if isinstance(w, exp.Columns) else [w])]:
            if isinstance(k, exp.Literal) and not k.is_string:  # a position in the select list
                pos = int(k.this) if k.this.isdigit() else 0
                if not 1 <= pos <= len(st.outputs):
                    raise PlanError(f"DISTINCT ON position {k.this} is not in the select list")
                e = st.outputs[pos - 1][2]
            elif isinstance(k, exp.Column) and not k.table and k.name.lower() in by_alias:
                e = by_alias[k.name.lower()]  # a select-list name, as ORDER BY reads it
            else:
                e = self._post_or_expr(k, st)
            on_keys.append((self.fresh("distinct_on"), e))
        st.distinct = None
        return on_keys

    def _order_by(self, st) -> list[tuple[str, Expr]]:
        """ORDER BY as sort keys over the projection (``st.sort_keys``): a position or a
        select-list name is that output, an expression equal to an output is that output, any
        other expression a hidden column (returned)."""
        hidden: list[tuple[str, Expr]] = []
        if st.order is None:
            return hidden
        outputs = st.outputs
        out_by_alias = {}
        for (u, internal, e) in outputs:
            out_by_alias.setdefault(u.lower(), (internal, e))
        for o in st.order.expressions:
            t = o.this
            target: Expr | None = None
            if isinstance(t, exp.Literal) and not t.is_string:
                k = int(t.this) if t.this.isdigit() else 0
                if not 1 <= k <= len(outputs):
                    raise PlanError(f"ORDER BY position {k} is not in the select list")
                _, internal, e = outputs[k - 1]
                target = Col(internal, e.type)
            elif isinstance(t, exp.Column) and not t.table and t.name.lower() in out_by_alias:
                internal, e = out_by_alias[t.name.lower()]
                if len({str(x) for (u, _, x) in outputs if u.lower() == t.name.lower()}) > 1:
                    raise UnsupportedError(f"ORDER BY {t.name}: several select-list items have that name")
                target = Col(internal, e.type)
            else:
                # its subqueries (``ORDER BY (SELECT ... WHERE t2.k = t.k)``) joined as values first
                if st.distinct is not None and t.find(exp.Subquery, exp.Exists, exp.Select) is not None:
                    raise UnsupportedError("a subquery in ORDER BY with DISTINCT")
                st.plan = self._join_subqueries(t, st.plan, st.post_ctx)
                e = self._post_or_expr(t, st)
                for (_, internal, oe) in outputs:
                    if oe == e:
                        target = Col(internal, e.type)
                        break
                if target is None:
                    if st.distinct is not None:
                        raise PlanError("ORDER BY expressions must appear in the select list with DISTINCT")
                    hn = self.fresh("sort_key")
                    hidden.append((hn, e))
                    target = Col(hn, e.type)
            st.sort_keys.append(self._sort_key(o, target))
        return hidden
