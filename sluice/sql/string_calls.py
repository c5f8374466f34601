"""String function calls of the translator: those of constant parameters (``functions/strings.py``)
and of two strings (``functions/similarity.py``), with the plain calls sqlglot has no class
for (mixed into :class:`sluice.sql.translate.Translator`; registered in
:data:`sluice.sql.expressions.HANDLERS` when imported)."""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import Expr
from sluice.sql.calls import NAMED_CALLS
from sluice.sql.coverage import KNOWN_CALLS, NESTED_CALLS, construct_name
from sluice.sql.dialect import wrong_arguments
from sluice.sql.expressions import _cutoff, handles
from sluice.sql.literals import _const_int, _const_str


class StringCalls:
    """Translator methods of string function calls."""

    # ---- string functions of constant parameters (functions/strings.py)

    def _string_fn(self, n, ctx, name: str, *params) -> Expr:
        return E.make_func(name, [self.expr(n.this, ctx)], params)

    @handles(exp.StartsWith)
    def _x_startswith(self, n, ctx):
        return self._string_fn(n, ctx, "starts_with", _const_str(n.expression, "STARTS_WITH"))

    @handles(exp.EndsWith)
    def _x_endswith(self, n, ctx):
        return self._string_fn(n, ctx, "ends_with", _const_str(n.expression, "ENDS_WITH"))

    @handles(exp.Contains)
    def _x_contains(self, n, ctx):
        return self._string_fn(n, ctx, "contains", _const_str(n.expression, "CONTAINS"))

    @handles(exp.StrPosition)
    def _x_strposition(self, n, ctx):
        return self._string_fn(n, ctx, "strpos", _const_str(n.args["substr"], "STRPOS"))

    @handles(exp.Replace)
    def _x_replace(self, n, ctx):
        if n.args.get("replacement") is None:
            raise PlanError("REPLACE needs a string, a pattern and a replacement")
        return self._string_fn(n, ctx, "replace", _const_str(n.expression, "REPLACE"),
                               _const_str(n.args["replacement"], "REPLACE"))

    @handles(exp.SplitPart)
    def _x_splitpart(self, n, ctx):
        sep = _const_str(n.args.get("delimiter"), "SPLIT_PART")
        index = _const_int(n.args.get("part_index"), "SPLIT_PART")
        if sep == "" or index == 0:
            raise UnsupportedError("SPLIT_PART with an empty separator or index 0")
        return self._string_fn(n, ctx, "split_part", sep, index)

    @handles(exp.Pad)
    def _x_pad(self, n, ctx):
        name = "lpad" if n.args.get("is_left") else "rpad"
        if n.args.get("fill_pattern") is None:
            raise wrong_arguments(name.upper())  # (DuckDB has no default fill; ' ' was taken)
        width = _const_int(n.expression, name.upper())
        if not -2 ** 31 <= width < 2 ** 31:  # (2**63 - 1 crashed pyarrow's kernel)
            raise PlanError(f"{name.upper()} width {width} is no INTEGER")
        fill = _const_str(n.args.get("fill_pattern"), name.upper())
        if len(fill) != 1:
            raise UnsupportedError(f"{name.upper()} with a fill that is not one character")
        return self._string_fn(n, ctx, name, width, fill)

    @handles(exp.RegexpLike)
    def _x_regexplike(self, n, ctx):
        return self._string_fn(n, ctx, "regexp_matches", _const_str(n.expression, "REGEXP_MATCHES"))

    @handles(exp.RegexpReplace)
    def _x_regexpreplace(self, n, ctx):
        mods = _const_str(n.args["modifiers"], "REGEXP_REPLACE") if n.args.get("modifiers") else ""
        if set(mods) - {"g"}:
            raise UnsupportedError(f"REGEXP_REPLACE options {mods!r} (only 'g')")
        if n.args.get("replacement") is None:
            raise PlanError("REGEXP_REPLACE needs a string, a pattern and a replacement")
        return self._string_fn(n, ctx, "regexp_replace", _const_str(n.expression, "REGEXP_REPLACE"),
                               _const_str(n.args["replacement"], "REGEXP_REPLACE"), "g" in mods)

    @handles(exp.Reverse)
    def _x_reverse(self, n, ctx):
        return self._string_fn(n, ctx, "reverse")

    @handles(exp.Left)
    def _x_left(self, n, ctx):
        return self._string_fn(n, ctx, "left", _const_int(n.expression, "LEFT"))

    @handles(exp.Right)
    def _x_right(self, n, ctx):
        return self._string_fn(n, ctx, "right", _const_int(n.expression, "RIGHT"))

    # ---- functions of two strings (functions/similarity.py) and other plain calls

    @handles(exp.Levenshtein)
    def _x_levenshtein(self, n, ctx):
        """LEVENSHTEIN(a, b) / EDITDIST3(a, b)."""
        return self._two_strings("levenshtein", [n.this] + ([n.expression] if n.expression is not None else []), ctx)

    @handles(exp.Anonymous)
    def _x_anonymous(self, n, ctx):
        """A plain call sqlglot has no class for, by name (``coverage.KNOWN_CALLS``)."""
        name = str(n.this).lower()
        if name not in KNOWN_CALLS:
            raise UnsupportedError(f"{construct_name(n)} in this position")
        if name in NAMED_CALLS:
            return NAMED_CALLS[name](self, n, ctx)
        if name in NESTED_CALLS:
            return self.nested_call(name, n, ctx)
        if name in ("jaro_similarity", "jaro_winkler_similarity") and len(n.expressions) == 3:
            return self._two_strings(name, n.expressions[:2], ctx, _cutoff(self.expr(n.expressions[2], ctx), name))
        return self._two_strings({"mismatches": "hamming"}.get(name, name), n.expressions, ctx)

    def _two_strings(self, name: str, nodes, ctx, *params) -> Expr:
        if len(nodes) != 2:
            raise PlanError(f"{name.upper()} needs two strings" + (" and an optional score cutoff" if "jaro" in name else ""))
        return E.make_func(name, [self.expr(x, ctx) for x in nodes], params)
