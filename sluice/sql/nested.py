"""LIST, STRUCT and MAP expressions: sqlglot nodes -> the plan's nested functions
(:mod:`sluice.expr.functions.nested`), DuckDB's spellings and resolution rules.

- ``s.a`` / ``t.s.a`` / ``s.a.b``: a name that is no ``table.column`` is tried as a struct
  column followed by fields (DuckDB binds ``table.column`` first); ``(s).a`` is a Dot.
- ``x[...]``: a struct's field (a string constant), a list's element (1-based, negative from
  the end) or slice, a map's value (DuckDB 2.0: the value itself, NULL where missing).
- Calls sqlglot has no class for are read by name (``NESTED_CALLS``)."""

from __future__ import annotations

import re

from sqlglot import exp

from sluice.sql.agg_states import is_state

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import Expr, Lit, Col
from sluice.types import INT64, STRING, list_of
from sluice.sql.literals import _const_str
from sluice.sql.coverage import NESTED_CALLS
from sluice.sql.expressions import handles
from sluice.sql.lambdas import comprehension
from sluice.sql.scope import Ctx, Source
from sluice.expr.functions.string_lists import check_regex_group
from sluice.expr.functions.strings import _check_regex as check_regex
from sluice.plan.logical import Project, Unnest
from sluice.sql.syntax import AGG_FUNCS


def _context_assertions(pattern: str) -> bool:
    """Whether ``pattern`` holds an assertion that looks before the match's position: ``^``
    (not a class's negation), ``\\A``, ``\\b``, ``\\B``."""
    plain = re.sub(r"\\.", lambda m: m.group(0) if m.group(0) in ("\\A", "\\b", "\\B") else "", pattern)
    return any(x in plain for x in ("\\A", "\\b", "\\B")) or "^" in plain.replace("[^", "[")

class NestedExpressions:
    """Translator methods for nested values (mixed into :class:`sluice.sql.translate.Translator`)."""

    def struct_path(self, n: exp.Column, ctx: Ctx) -> Expr | None:
        """``t.s.a.b`` or ``s.a.b`` as fields of a struct column; None when no prefix of the
        name is a struct column."""
        parts = [p.name for p in n.parts]
        for start in (2, 1):
            if len(parts) <= start:
                continue
            try:
                base = ctx.scope.resolve(parts[0], parts[1]) if start == 2 else ctx.scope.resolve(None, parts[0])
            except PlanError:
                continue
            if base.type.kind != "struct":
                continue
            e: Expr = base
            for f in parts[start:]:
                e = field(e, f)
            return e
        return None

    @handles(exp.Dot)
    def _x_dot(self, n: exp.Dot, ctx):
        name = n.expression
        if not isinstance(name, exp.Identifier):
            raise UnsupportedError(f"field access with {name.sql(dialect='duckdb')}")
        return field(self.expr(n.this, ctx), name.name)

    @handles(exp.StructExtract)
    def _x_struct_extract(self, n, ctx):
        key = n.expression
        if not (isinstance(key, exp.Literal) and key.is_string):
            raise UnsupportedError("STRUCT_EXTRACT with a field that is not a string constant")
        return field(self.expr(n.this, ctx), key.this)

    @handles(exp.Struct)
    def _x_struct(self, n: exp.Struct, ctx):
        names, args = [], []
        for item in n.expressions:
            if not isinstance(item, exp.PropertyEQ):
                raise UnsupportedError("a struct field without a name")
            key = item.this
            names.append(key.this if isinstance(key, exp.Literal) else key.name)
            args.append(self.expr(item.expression, ctx))
        if not args:
            raise PlanError("a struct needs at least one field")
        return E.make_func("struct_pack", args, (tuple(names),))

    @handles(exp.Array)
    def _x_array(self, n: exp.Array, ctx):
        if len(n.expressions) == 1 and isinstance(n.expressions[0], exp.Comprehension):
            return comprehension(self, n.expressions[0], ctx)
        return E.make_func("list_value", [self.expr(x, ctx) for x in n.expressions])

    @handles(exp.Bracket)
    def _x_bracket(self, n: exp.Bracket, ctx):
        if len(n.expressions) != 1:
            raise UnsupportedError("a subscript with several indexes")
        base = self.expr(n.this, ctx)
        sub = n.expressions[0]
        kind = base.type.kind
        if kind == "struct":
            if not (isinstance(sub, exp.Literal) and sub.is_string):
                raise UnsupportedError("a struct subscript that is not a string constant")
            return field(base, sub.this)
        if kind == "map":
            if isinstance(sub, exp.Slice):
                raise PlanError("a map cannot be sliced")
            return E.make_func("map_extract_value", [base, self.expr(sub, ctx)])
        if kind == "string" and not isinstance(sub, exp.Slice):  # DuckDB: s[i] is SUBSTRING(s, i, 1), to the error
            return self.expr(exp.Substring(this=n.this.copy(), start=sub.copy(), length=exp.Literal.number(1)), ctx)
        if kind not in ("list", "string"):
            raise UnsupportedError(f"{'slices' if isinstance(sub, exp.Slice) else 'subscripts'} of {base.type} values")
        if isinstance(sub, exp.Slice):
            if sub.args.get("step") is not None:
                raise UnsupportedError(f"{kind} slices with a step")
            lo, hi = sub.this, sub.expression
            bounds = [self.expr(b, ctx) for b in (lo, hi) if b is not None]
            if kind == "string":  # code points, DuckDB's bounds (functions/string_slices.py)
                bounds = [Lit(None, INT64) if b.type.kind == "null" else b for b in bounds]
            return E.make_func("list_slice" if kind == "list" else "string_slice", [base] + bounds,
                               (lo is not None, hi is not None))
        return E.make_func("list_extract", [base, self.expr(sub, ctx)])

    @handles(exp.PropertyEQ, exp.Slice)
    def _x_out_of_place(self, n, ctx):
        """``name := x`` outside a struct and ``a:b`` outside a list subscript (read there)."""
        raise UnsupportedError("named arguments" if isinstance(n, exp.PropertyEQ) else "slices outside a list subscript")

    @handles(exp.Map)
    def _x_map(self, n: exp.Map, ctx):
        """MAP(keys, values): two lists paired position by position."""
        if n.args.get("keys") is None or n.args.get("values") is None:
            raise UnsupportedError("an empty MAP() constant (its key and value types are unknown)")
        return E.make_func("map_from_lists", [self.expr(n.args["keys"], ctx), self.expr(n.args["values"], ctx)])

    @handles(exp.MapFromEntries)
    def _x_map_from_entries(self, n, ctx):
        return E.make_func("map_from_entries", [self.expr(n.this, ctx)])

    @handles(exp.ToMap)
    def _x_to_map(self, n: exp.ToMap, ctx):
        """MAP {k: v, ...}: the keys' list and the values' list."""
        if not isinstance(n.this, exp.Struct) or not n.this.expressions:
            raise UnsupportedError("an empty MAP {} constant (its key and value types are unknown)")
        keys, values = [], []
        for item in n.this.expressions:
            if not isinstance(item, exp.PropertyEQ):
                raise PlanError("MAP {...} needs key: value pairs")
            k = item.this
            keys.append(self.expr(exp.Literal.string(k.name) if isinstance(k, exp.Identifier) else k, ctx))
            values.append(self.expr(item.expression, ctx))
        return E.make_func("map_from_lists", [E.make_func("list_value", keys), E.make_func("list_value", values)])

    @handles(exp.ArraySize)
    def _x_array_size(self, n, ctx):
        if n.args.get("expression") is not None:
            raise UnsupportedError("ARRAY_LENGTH of a dimension")
        return E.make_func("list_len", [self.expr(n.this, ctx)])

    @handles(exp.ArrayContains)
    def _x_array_contains(self, n, ctx):
        return E.make_func("list_contains", [self.expr(n.this, ctx), self.expr(n.expression, ctx)])

    @handles(exp.ArrayOverlaps, exp.ArrayContainsAll, exp.ArrayContainedBy)
    def _x_list_sets(self, n, ctx):
        """``list_has_any`` / ``&&``, ``list_has_all`` / ``@>``, and ``a <@ b`` (``b @> a``)."""
        a, b = self.expr(n.this, ctx), self.expr(n.expression, ctx)
        if isinstance(n, exp.ArrayOverlaps):
            return E.make_func("list_has_any", [a, b])
        return E.make_func("list_has_all", [a, b] if isinstance(n, exp.ArrayContainsAll) else [b, a])

    @handles(exp.ArrayConcat)
    def _x_array_concat(self, n, ctx):
        if len(n.expressions) != 1:
            raise PlanError("LIST_CONCAT takes two lists")
        return E.make_func("list_concat", [self.expr(n.this, ctx), self.expr(n.expressions[0], ctx)])

    @handles(exp.ArraySort)
    def _x_array_sort(self, n, ctx):
        """LIST_SORT(l [, 'ASC' | 'DESC' [, 'NULLS FIRST' | 'NULLS LAST']]): sqlglot reads the
        words into flags (DuckDB's default: ASC NULLS LAST)."""
        asc, nf = n.args.get("asc"), n.args.get("nulls_first")
        desc = isinstance(asc, exp.Boolean) and not asc.this
        nulls_first = isinstance(nf, exp.Boolean) and bool(nf.this)
        return E.make_func("list_sort", [self.expr(n.this, ctx)], (desc, nulls_first))

    @handles(exp.ArrayDistinct)
    def _x_array_distinct(self, n, ctx):
        return E.make_func("list_distinct", [self.expr(n.this, ctx)])

    @handles(exp.ArrayMin, exp.ArrayMax)
    def _x_array_min_max(self, n, ctx):
        return E.make_func("list_min" if isinstance(n, exp.ArrayMin) else "list_max", [self.expr(n.this, ctx)])

    @handles(exp.MapKeys)
    def _x_map_keys(self, n, ctx):
        return E.make_func("map_keys", [self.expr(n.this, ctx)])

    @handles(exp.ArraySlice)
    def _x_array_slice(self, n: exp.ArraySlice, ctx):
        """ARRAY_SLICE(l, a, b): ``l[a:b]`` of a list or a string."""
        if n.args.get("step") is not None:
            raise UnsupportedError("ARRAY_SLICE with a step")
        if n.args.get("start") is None or n.args.get("end") is None:
            raise PlanError("ARRAY_SLICE takes a list, a start and an end")
        return self._slice([self.expr(x, ctx) for x in (n.this, n.args["start"], n.args["end"])])

    def _slice(self, args: list[Expr]) -> Expr:
        if len(args) == 4:
            raise UnsupportedError("LIST_SLICE with a step")
        if len(args) != 3:
            raise PlanError("LIST_SLICE takes a list, a start and an end")
        if args[0].type.kind not in ("list", "string"):
            raise UnsupportedError(f"LIST_SLICE / ARRAY_SLICE of a {args[0].type} value")
        args = args[:1] + [Lit(None, INT64) if b.type.kind == "null" else b for b in args[1:]]  # NULL bound: NULL
        return E.make_func("list_slice" if args[0].type.kind == "list" else "string_slice", args, (True, True))

    @handles(exp.Split)
    def _x_string_split(self, n: exp.Split, ctx):
        """STRING_SPLIT / STR_SPLIT(s, sep) with a constant separator (NULL: ``[s]``)."""
        sep = self.expr(n.expression, ctx)
        if not isinstance(sep, Lit) or sep.type.kind not in ("string", "null"):
            raise UnsupportedError("STRING_SPLIT with a separator that is not a string constant")
        if sep.value == "":
            raise UnsupportedError("STRING_SPLIT with an empty separator")
        return E.make_func("string_split", [self.expr(n.this, ctx)], (sep.value,))

    @handles(exp.RegexpSplit)
    def _x_string_split_regex(self, n: exp.RegexpSplit, ctx):
        """STRING_SPLIT_REGEX / STR_SPLIT_REGEX(s, pattern) with a constant pattern (NULL: a NULL
        list); options other than 'c' (the default) are refused."""
        option = n.args.get("limit")
        if option is not None and not (isinstance(option, exp.Literal) and option.is_string and option.this == "c"):
            raise UnsupportedError("STRING_SPLIT_REGEX with options")
        pattern = self.expr(n.expression, ctx)
        if not isinstance(pattern, Lit) or pattern.type.kind not in ("string", "null"):
            raise UnsupportedError("STRING_SPLIT_REGEX with a pattern that is not a string constant")
        s = self.expr(n.this, ctx)
        if pattern.value is None:  # DuckDB: the string whole, as STRING_SPLIT with a NULL separator
            return E.make_func("string_split", [s], (None,))
        check_regex("string_split_regex", pattern.value)
        if _context_assertions(pattern.value):
            raise UnsupportedError("STRING_SPLIT_REGEX with ^, \\A, \\b or \\B in the pattern (DuckDB matches "
                                   "them against the whole string, sluice against what is left)")
        return E.make_func("string_split_regex", [s], (pattern.value,))

    @handles(exp.RegexpExtractAll)
    def _x_regexp_extract_all(self, n: exp.RegexpExtractAll, ctx):
        """REGEXP_EXTRACT_ALL(s, pattern [, group | [names] [, 'c' | 'i']]) with a constant
        pattern and group: a list of the group's texts, or with a list of names a list of
        structs (field i: group i); a NULL pattern or group is a NULL list (DuckDB's)."""
        group_node = n.args.get("group")
        names = None
        if isinstance(group_node, exp.Array):
            names = _group_names(group_node)
        pat = self.expr(n.expression, ctx)
        if names is not None and not (isinstance(pat, Lit) and pat.type.kind == "string" and pat.value is not None):
            raise PlanError("REGEXP_EXTRACT_ALL with a list of names needs a constant pattern")
        if isinstance(pat, Lit) and pat.value is None:
            return Lit(None, list_of(STRING))
        if not isinstance(pat, Lit) or pat.type.kind != "string":
            raise UnsupportedError("REGEXP_EXTRACT_ALL with a pattern that is not a string constant")
        group = 0
        if group_node is not None and names is None:
            g = self.expr(group_node, ctx)
            if isinstance(g, Lit) and g.value is None:
                return Lit(None, list_of(STRING))
            if not isinstance(g, Lit) or not g.type.is_integer:
                raise UnsupportedError("REGEXP_EXTRACT_ALL with a group that is not an integer constant")
            group = int(g.value)
        pattern = pat.value
        opts = n.args.get("parameters")
        if opts is not None:
            flags = _const_str(opts, "REGEXP_EXTRACT_ALL options")
            if set(flags) - {"c", "i"}:
                raise UnsupportedError(f"REGEXP_EXTRACT_ALL options {flags!r} (only 'c' and 'i')")
            pattern = ("(?i)" if flags[-1:] == "i" else "") + pattern  # the last decides, as DuckDB
        check_regex_group(pattern, len(names) if names is not None else group, names is not None)
        return E.make_func("regexp_extract_all", [self.expr(n.this, ctx)], (pattern, group, names))

    def nested_call(self, name: str, n: exp.Anonymous, ctx) -> Expr:
        """A call of ``NESTED_CALLS`` by name."""
        op = NESTED_CALLS[name]
        args = [self.expr(x, ctx) for x in n.expressions]
        if op == "list_sort":
            return _list_sort(args, n)
        if op == "list_slice":
            return self._slice(args)
        want = {"list_concat": 2, "list_contains": 2, "list_extract": 2, "map_extract": 2,
                "map_extract_value": 2, "list_has_any": 2, "list_has_all": 2}.get(op, 1)
        if len(args) != want:
            raise PlanError(f"no function {name.upper()} with {len(args)} arguments")
        if op == "list_len" and name == "len" and args[0].type.kind == "string":
            return E.make_func("length", args)
        if op == "list_extract" and args[0].type.kind == "string":  # SUBSTRING(s, i, 1), as s[i]
            s, i = n.expressions
            return self.expr(exp.Substring(this=s.copy(), start=i.copy(), length=exp.Literal.number(1)), ctx)
        return E.make_func(op, args)


def _group_names(node: exp.Array) -> tuple[str, ...]:
    """REGEXP_EXTRACT_ALL's list of group names: string constants, non-empty, no NULL, none
    twice (case-insensitively), DuckDB's binder errors otherwise."""
    names = []
    for x in node.expressions:
        if isinstance(x, exp.Null):
            raise PlanError("REGEXP_EXTRACT_ALL: a NULL group name")
        if not (isinstance(x, exp.Literal) and x.is_string):
            raise UnsupportedError("REGEXP_EXTRACT_ALL with group names that are not string constants")
        if x.this.lower() in (m.lower() for m in names):
            raise PlanError(f"REGEXP_EXTRACT_ALL: the group name {x.this!r} twice")
        names.append(x.this)
    if not names:
        raise PlanError("REGEXP_EXTRACT_ALL: the list of group names is empty")
    return tuple(names)


def _list_sort(args: list[Expr], n) -> Expr:
    """LIST_SORT(l [, 'ASC' | 'DESC' [, 'NULLS FIRST' | 'NULLS LAST']])."""
    if not 1 <= len(args) <= 3:
        raise PlanError("LIST_SORT takes a list, an order and a NULL order")
    words = []
    for a in args[1:]:
        if not (isinstance(a, Lit) and a.type.kind == "string" and a.value is not None):
            raise UnsupportedError("LIST_SORT with an order that is not a string constant")
        words.append(" ".join(a.value.upper().split()))
    if words and words[0] not in ("ASC", "DESC"):
        raise PlanError(f"LIST_SORT order {words[0]!r} is not ASC or DESC")
    if len(words) > 1 and words[1] not in ("NULLS FIRST", "NULLS LAST"):
        raise PlanError(f"LIST_SORT NULL order {words[1]!r} is not NULLS FIRST or NULLS LAST")
    desc = bool(words) and words[0] == "DESC"
    nulls_first = len(words) > 1 and words[1] == "NULLS FIRST"
    return E.make_func("list_sort", args[:1], (desc, nulls_first))


def field(e: Expr, name: str) -> Expr:
    """Field ``name`` of struct ``e`` (case-insensitive, as DuckDB)."""
    if e.type.kind != "struct":
        raise PlanError(f"cannot take field {name!r} of a {e.type} value")
    if is_state(e.type):
        raise PlanError(f"Cannot extract field {name!r} from an aggregate state (as in DuckDB)")
    return E.make_func("struct_extract", [e], (name,))


class UnnestSources:
    """UNNEST in FROM (mixed into the translator): ``FROM t, UNNEST(t.l) AS u(x)`` joins each
    row of what precedes it to the elements of its list, as a lateral join (DuckDB: rows with
    NULL or empty lists drop out). ``SELECT UNNEST(l)`` reaches here rewritten into that form
    (:func:`select_unnest`)."""

    def unnest_source(self, node: exp.Unnest, prefix, ctx: Ctx, keep: bool = False):
        """``node`` joined to ``prefix``'s rows (``keep``: ``LEFT JOIN UNNEST(...) ON TRUE``, a
        row without elements kept once with NULLs). Several lists only as :func:`select_unnest`
        writes them (aligned by position); ``WITH ORDINALITY`` adds the 1-based position."""
        if node.args.get("explode_array"):
            raise UnsupportedError("UNNEST of arrays of structs")
        alias = node.args.get("alias")
        names = [c.name.lower() for c in alias.columns] if alias is not None else []
        table = alias.name.lower() if alias is not None and alias.name else "unnest"
        if len(node.expressions) != 1 and table != HIDDEN_UNNEST:
            raise UnsupportedError("UNNEST of several lists at once")
        lists = [self.expr(x, ctx) for x in node.expressions]
        for e in lists:
            if e.type.kind != "list":
                raise UnsupportedError(f"UNNEST of a {e.type} value (only lists)")
        offset = node.args.get("offset")
        ordinality = None
        if offset:
            ordinality = offset.name.lower() if isinstance(offset, exp.Identifier) else "ordinality"
            if keep:
                raise UnsupportedError("LEFT JOIN UNNEST ... WITH ORDINALITY")
        if len(names) > len(lists):
            raise PlanError("UNNEST of a list gives one column")
        if not names:
            names = [alias.name.lower() if alias is not None and alias.name else "unnest"]
        sources = tuple(self.fresh("unnest list") for _ in lists)
        outs = tuple(self.fresh(c) for c in names)
        kept = tuple((n, Col(n, t)) for n, t in prefix.schema.items())
        ord_out = self.fresh(ordinality) if ordinality is not None else None
        plan = Unnest(Project(prefix, kept + tuple(zip(sources, lists))), sources, outs, ord_out, keep)
        cols = {c: Col(o, e.type.element) for c, o, e in zip(names, outs, lists)}
        if ordinality is not None:
            cols[ordinality] = Col(ord_out, INT64)
        return plan, Source(table, cols)


#: The alias of the UNNEST a select list's UNNESTs become (a name no query can write).
HIDDEN_UNNEST = "\x00unnest"


def select_unnest(sel: exp.Select) -> exp.Select | None:
    """``SELECT a, UNNEST(l) [AS x], f(UNNEST(m)) FROM ...`` as ``SELECT a, x0 AS x, f(x1) FROM ...,
    UNNEST(l, m) AS u(x0, x1)`` (the same rows: one per position of the longest list, the
    shorter ones NULL past their end; a row whose lists are all NULL or empty dropped -- DuckDB's
    alignment); None when the select list has no UNNEST. In a query without grouping,
    aggregates, windows or set operations; anything else is refused by name. Without FROM, the
    query reads one row (``SELECT UNNEST([1, 2])`` is ``FROM (SELECT 1), UNNEST([1, 2])``)."""
    hits = [h for it in sel.expressions for h in it.find_all(exp.Explode) if h.find_ancestor(exp.Select) is sel]
    if not hits:
        return None
    if any(h.find_ancestor(exp.Lambda) is not None for h in hits):
        raise UnsupportedError("UNNEST in lambda expressions")
    if any(h.find_ancestor(exp.Explode) is not None for h in hits):
        raise UnsupportedError("UNNEST of an UNNEST")
    if sel.args.get("group") or sel.args.get("having") or sel.args.get("qualify") \
            or any(isinstance(n, tuple(AGG_FUNCS)) or isinstance(n, exp.Window) for it in sel.expressions for n in it.walk()):
        raise UnsupportedError("UNNEST in the select list of a query with GROUP BY, aggregates or windows")
    if any(len(h.expressions) > 0 for h in hits):
        raise UnsupportedError("UNNEST with options (recursive, max_depth)")
    if sel.args.get("from_") is None and any(isinstance(n, exp.Star) for it in sel.expressions for n in it.walk()):
        raise UnsupportedError("UNNEST in the select list without FROM beside *")
    sel = sel.copy()
    for item in list(sel.expressions):  # f(UNNEST(l)) keeps its name as written: alias it first
        if not isinstance(item, (exp.Alias, exp.Explode)) and any(True for _ in item.find_all(exp.Explode)):
            item.replace(exp.Alias(this=item.copy(), alias=exp.to_identifier(item.sql(dialect="duckdb"), quoted=True)))
    hits = [h for it in sel.expressions for h in it.find_all(exp.Explode) if h.find_ancestor(exp.Select) is sel]
    if sel.args.get("from_") is None:  # SELECT UNNEST(l): over one row (the list is a constant)
        sel.set("from_", exp.From(this=exp.Subquery(this=exp.select(exp.Literal.number(1)),
                                                    alias=exp.TableAlias(this=exp.to_identifier("\x00one")))))
    lists = [h.this.copy() for h in hits]
    cols = [f"\x00x{i}" for i in range(len(hits))]  # names no query can write (nor an enclosing one's)
    for h, c in zip(hits, cols):
        ref = exp.column(c, table=HIDDEN_UNNEST)
        if h.parent is sel:  # a select item of its own, unnamed: DuckDB's name
            h.replace(exp.alias_(ref, f"unnest({h.this.sql(dialect='duckdb')})", quoted=True))
        else:
            h.replace(ref)
    join = exp.Join(this=exp.Unnest(expressions=lists,
                                    alias=exp.TableAlias(this=exp.to_identifier(HIDDEN_UNNEST),
                                                         columns=[exp.to_identifier(c) for c in cols])))
    sel.append("joins", join)
    return sel
