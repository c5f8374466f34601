"""The select list's stars and aliases: ``*`` and ``t.*`` (less EXCLUDE, with REPLACE) and
``COLUMNS(...)`` expanded over the query's sources, and select-list aliases checked to be defined before they are used
(mixed into :class:`sluice.sql.translate.Translator`)."""

from __future__ import annotations

import re

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.scope import Scope


class SelectList:
    """Translator methods of the select list."""

    def _expand_star(self, sel: exp.Select, scope: Scope) -> list[exp.Expression]:
        """``*`` and ``t.*`` as column references, less ``EXCLUDE (...)``, with ``REPLACE (e AS c)``."""
        out = []
        for it in sel.expressions:
            if isinstance(it, exp.Columns):
                out += self._expand_columns(it, scope)
                continue
            star = it if isinstance(it, exp.Star) else it.this if isinstance(it, exp.Column) else None
            if not isinstance(star, exp.Star):
                out.append(it)
                continue
            table = it.table.lower() if isinstance(it, exp.Column) else None
            excluded = {(c.table.lower() if isinstance(c, exp.Column) and c.table else None, c.name.lower())
                        for c in star.args.get("except_") or []}
            replaced = {r.alias.lower(): r for r in star.args.get("replace") or []}
            used: set = set()
            sources = _star_sources(scope, table)
            for s in sources:
                for cname in s.unreadable:
                    if (None, cname) not in excluded and (s.alias, cname) not in excluded:
                        s.refuse(cname)  # * cannot leave a column out silently: EXCLUDE it
                    used |= {k for k in ((None, cname), (s.alias, cname)) if k in excluded}
                for cname in s.cols:
                    if not table and (s.alias, cname) in scope.hidden:
                        continue  # a USING column: shown once, from the left side
                    hit = {k for k in ((None, cname), (s.alias, cname)) if k in excluded}
                    if hit:
                        used |= hit
                        continue
                    if not table and cname in scope.merged_at and scope.merged_at[cname] is s.cols[cname]:
                        # the merged USING column in the left side's place (RIGHT / FULL: not its value)
                        out.append(exp.alias_(exp.column(cname), s.shown.get(cname, cname), quoted=cname in s.shown))
                        continue
                    if cname in replaced:
                        used.add(("replace", cname))
                        out.append(replaced[cname])
                    elif cname in s.shown:  # named as the source writes it (``MyCol``)
                        out.append(exp.alias_(exp.column(cname, table=s.alias), s.shown[cname], quoted=True))
                    else:
                        out.append(exp.column(cname, table=s.alias))
            missing = [c for c in excluded if c not in used] + \
                [(None, c) for c in replaced if ("replace", c) not in used]
            if missing:
                t, c = missing[0]
                raise PlanError(f"column {c!r} in * EXCLUDE/REPLACE is not in the FROM clause"
                                + (f" table {t!r}" if t else ""))
        return out


    def _expand_columns(self, node: exp.Columns, scope: Scope) -> list[exp.Expression]:
        """DuckDB's ``COLUMNS(...)`` as the columns it names, in the order ``*`` gives them:
        ``COLUMNS(*)`` (with EXCLUDE / REPLACE) is ``*``; ``COLUMNS('re')`` those whose name the
        regular expression matches anywhere (as regexp_matches); ``COLUMNS(['a', 'b'])`` those
        names (in the FROM clause's order, as DuckDB). Naming none is an error, as in DuckDB."""
        arg = node.this
        if isinstance(arg, exp.Star):
            return self._expand_star(exp.Select(expressions=[arg.copy()]), scope)
        every = self._expand_star(exp.Select(expressions=[exp.Star()]), scope)
        if isinstance(arg, exp.Literal) and arg.is_string:
            try:
                pattern = re.compile(arg.this)
            except re.error as e:
                raise PlanError(f"COLUMNS: invalid regular expression {arg.this!r}: {e}") from None
            out = [c for c in every if pattern.search(c.alias_or_name)]
            if not out:
                raise PlanError(f"COLUMNS: no column matches the regular expression {arg.this!r}")
            return out
        if isinstance(arg, exp.Array) and arg.expressions and \
                all(isinstance(a, exp.Literal) and a.is_string for a in arg.expressions):
            names = {c.alias_or_name.lower() for c in every}
            for a in arg.expressions:
                if a.this.lower() not in names:
                    raise PlanError(f"COLUMNS: column {a.this!r} is not in the FROM clause")
            wanted = {a.this.lower() for a in arg.expressions}
            return [c for c in every if c.alias_or_name.lower() in wanted]
        raise UnsupportedError("COLUMNS(...) of other than *, a regular expression or a list of names")


def _star_sources(scope: Scope, table: str | None) -> list:
    """The FROM items ``*`` or ``t.*`` stands for, as DuckDB binds them: ``*`` all of this
    SELECT's (there must be some: ``lateral (select *)`` once stood for no column and the
    LATERAL join answered t's rows); ``t.*`` this SELECT's ``t`` or else an enclosing query's
    (``lateral (select t.*)``: t's columns as outer references)."""
    if table is None:
        if not scope.sources:
            raise PlanError("* without a FROM clause")
        return list(scope.sources)
    level: Scope | None = scope
    while level is not None:
        hits = [s for s in level.sources if s.alias == table]
        if hits:
            return hits
        level = level.parent
    if not scope.sources:
        raise PlanError(f"{table}.* without a FROM clause")
    raise PlanError(f"unknown table or alias {table!r} in {table}.*")


def _aliases_defined_before_use(items: list[exp.Expression], scope: Scope) -> None:
    """A name in the select list that is no column of this SELECT's FROM but an alias of its
    select list must be defined by an earlier item, as DuckDB binds it (``select a + 1 as x,
    x * 2``); DuckDB refuses one defined there or later even where an enclosing query has the
    column, and sluice read ``lateral (select b + 1 as b)`` as (b + 1) + 1 over the outer b."""
    first: dict[str, int] = {}
    for i, it in enumerate(items):
        if isinstance(it, exp.Alias):
            first.setdefault(it.alias.lower(), i)
    for i, it in enumerate(items):
        for c in it.find_all(exp.Column):
            name = c.name.lower()
            if c.table or first.get(name, -1) < i or _in_subquery(c, it) or scope.has_local(name):
                continue
            raise PlanError(f"column {c.name!r} is an alias of the select list defined after its use "
                            "(or by the same item)")


def _in_subquery(node: exp.Expression, root: exp.Expression) -> bool:
    """Whether ``node`` lies in a subquery inside ``root`` (it names that subquery's columns)."""
    node = node.parent
    while node is not None and node is not root:
        if isinstance(node, (exp.Query, exp.Subquery)):
            return True
        node = node.parent
    return False
