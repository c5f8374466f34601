"""String function calls of the translator: those of constant parameters (``functions/strings.py``),
of two strings (``functions/similarity.py``) with the plain calls sqlglot has no class for,
regular expressions, substrings, concatenation, FORMAT / PRINTF, TRIM and STRPTIME (mixed into
:class:`sluice.sql.translate.Translator`; registered in :data:`sluice.sql.expressions.HANDLERS`
when imported)."""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import NULL_TYPE, Expr, Lit
from sluice.sql.calls import NAMED_CALLS, formatted_value, printf_spec
from sluice.sql.coverage import KNOWN_CALLS, NESTED_CALLS
from sluice.sql.construct_names import construct_name
from sluice.sql.dialect import wrong_arguments
from sluice.sql.expressions import _cutoff, handles
from sluice.sql.literals import _const_int, _const_str, _int_lit
from sluice.types import BOOL, INT32, STRING
import re


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
        """REGEXP_MATCHES(s, pattern [, options]): options 'c' (case-sensitive, the default) and
        'i' (insensitive), the last deciding as in DuckDB; others are refused."""
        pattern = _const_str(n.expression, "REGEXP_MATCHES")
        flag = n.args.get("flag")
        if flag is not None:
            flags = _const_str(flag, "REGEXP_MATCHES options")
            if not flags or set(flags) - {"c", "i"}:
                raise UnsupportedError(f"REGEXP_MATCHES options {flags!r} (only 'c' and 'i')")
            pattern = ("(?i)" if flags[-1] == "i" else "") + pattern
        return self._string_fn(n, ctx, "regexp_matches", pattern)

    @handles(exp.SimilarTo)
    def _x_similar_to(self, n, ctx):
        """``s SIMILAR TO pattern``: DuckDB's regexp_full_match -- the pattern is an RE2 regular
        expression that must match the whole string (a constant; ``^`` and ``$`` inside it
        anchor as usual)."""
        pattern = n.expression
        if isinstance(pattern, exp.Null):
            return Lit(None, BOOL)
        pattern = _const_str(pattern, "SIMILAR TO")
        return self._string_fn(n, ctx, "regexp_matches", f"^(?:{pattern})$")

    @handles(exp.RegexpFullMatch)
    def _x_regexp_full_match(self, n, ctx):
        """REGEXP_FULL_MATCH(s, pattern [, 'c' | 'i']): the RE2 pattern (a constant, or an
        expression of constants) matches the whole string; other options are refused."""
        opts = n.args.get("options")
        flags = _const_str(opts, "REGEXP_FULL_MATCH") if opts is not None else ""
        if set(flags) - {"c", "i"}:
            raise UnsupportedError(f"REGEXP_FULL_MATCH options {flags!r} (only 'c' and 'i')")
        p = self.expr(n.expression, ctx)
        if isinstance(p, Lit) and p.value is None:
            return Lit(None, BOOL)
        if not (isinstance(p, Lit) and p.type.kind == "string"):
            raise UnsupportedError("REGEXP_FULL_MATCH with a pattern that is not a string constant")
        case = "(?i)" if flags[-1:] == "i" else ""  # the last of 'c' / 'i' decides, as DuckDB
        return self._string_fn(n, ctx, "regexp_matches", f"{case}^(?:{p.value})$")

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

    # ---- regular expressions, substrings, concatenation, FORMAT / PRINTF, TRIM, STRPTIME

    @handles(exp.RegexpExtract)
    def _x_regexpextract(self, n, ctx):
        """REGEXP_EXTRACT(s, pattern [, group]): the group's text in the first match, '' when
        there is none (as DuckDB), per distinct string."""
        group = _const_int(n.args["group"], "REGEXP_EXTRACT") if n.args.get("group") is not None else 0
        return self._string_fn(n, ctx, "regexp_extract", _const_str(n.expression, "REGEXP_EXTRACT"), group)

    @handles(exp.Substring)
    def _x_substring(self, n, ctx):
        a = self.expr(n.this, ctx)
        start = self.expr(n.args["start"], ctx) if n.args.get("start") is not None else Lit(1, INT32)
        length = n.args.get("length")
        ln = self.expr(length, ctx) if length is not None else None
        if not _int_lit(start) or (ln is not None and not _int_lit(ln)):
            if not all(p.type.is_integer or p.type.kind == "null" for p in [start] + ([ln] if ln is not None else [])):
                raise UnsupportedError("SUBSTRING with non-integer positions")
            if isinstance(a, Lit) and a.value is None:  # a NULL string: NULL, whatever the positions
                return Lit(None, STRING)
            return E.make_func("substring_rows", [a, start] + ([ln] if ln is not None else []))
        if start.value is None or (ln is not None and ln.value is None):
            return Lit(None, STRING)
        return E.make_func("substring", [a], (int(start.value), None if ln is None else int(ln.value)))

    @handles(exp.DPipe)
    def _x_dpipe(self, n, ctx):
        a, b = self.expr(n.this, ctx), self.expr(n.expression, ctx)
        if a.type.kind == "list" or b.type.kind == "list":  # [1] || [2]: LIST_CONCAT
            return E.make_func("list_concat", [a, b], (True,))  # NULL with a NULL operand, unlike LIST_CONCAT
        if a.type.kind == "null" or b.type.kind == "null":  # as DuckDB: NULL, of its NULL type
            return Lit(None, NULL_TYPE)
        return E.make_func("concat", [a, b])

    @handles(exp.Concat)
    def _x_concat(self, n, ctx):
        args = [self.expr(x, ctx) for x in n.expressions]
        if any(x.type.kind == "list" for x in args):  # DuckDB: CONCAT([1]) is a list, CONCAT('a', [1]) an error
            raise UnsupportedError("CONCAT of a LIST value (LIST_CONCAT concatenates lists)")
        args = [E.make_func("cast", [x], (STRING,)) if x.type.kind != "string" else x for x in args]
        if n.args.get("coalesce"):  # CONCAT(...) skips NULLs, unlike ||
            args = [E.make_func("coalesce", [x, Lit("", STRING)]) for x in args]
        return E.make_func("concat", args)

    @handles(exp.Format)
    def _x_format(self, n, ctx):
        """FORMAT('{} ... {}', args) / PRINTF('%s ... %d', args): each placeholder the next
        argument as text (``{{`` / ``}}`` / ``%%`` escape); NULL when an argument is. Other
        specifiers (widths, precisions) and floating-point or decimal arguments (whose text
        DuckDB's formatter writes its own way: 2.50 as 2.5) are refused."""
        return self._formatted(n.this, list(n.expressions), ctx, "PRINTF" if n.meta.get("printf") else "FORMAT")

    def _formatted(self, fmt_node, arg_nodes, ctx, what: str) -> Expr:
        if not (isinstance(fmt_node, exp.Literal) and fmt_node.is_string):
            raise UnsupportedError(f"{what} with a format that is not a string constant")
        fmt = fmt_node.this
        pieces: list[str | int] = []  # literal text, or the index of a placeholder
        holes: list[tuple[int, str]] = []  # each placeholder's argument and spec
        manual: bool | None = None  # FORMAT's {N} (manual) or {} (automatic) indexing
        text, i, k = "", 0, 0
        while i < len(fmt):
            two = fmt[i:i + 2]
            if what == "FORMAT" and two in ("{{", "}}") or what == "PRINTF" and two == "%%":
                text += two[0]
                i += 2
            elif what == "FORMAT" and fmt[i] == "{" and "}" in fmt[i:]:
                close = fmt.index("}", i)
                index, spec = _format_field(fmt[i + 1:close])
                if manual is not None and manual != (index is not None):
                    raise PlanError("FORMAT: cannot switch from automatic to manual argument indexing")
                manual = index is not None
                pieces += [text, len(holes)] if text else [len(holes)]
                holes.append((index if index is not None else k, spec))
                text, i, k = "", close + 1, k + 1
            elif what == "PRINTF" and two in ("%s", "%d", "%i"):
                pieces += [text, len(holes)] if text else [len(holes)]
                holes.append((k, two))
                text, i, k = "", i + 2, k + 1
            elif what == "PRINTF" and fmt[i] == "%" and printf_spec(fmt, i):
                spec = printf_spec(fmt, i)
                pieces += [text, len(holes)] if text else [len(holes)]
                holes.append((k, spec))
                text, i, k = "", i + len(spec), k + 1
            elif what == "FORMAT" and fmt[i] in "{}" or what == "PRINTF" and fmt[i] == "%":
                raise UnsupportedError(f"{what} specifier {fmt[i:i + 4]!r} (only {'{}, {N} and {:d}, {:0Nd}, {:Nd}, {:.Nf}' if what == 'FORMAT' else '%s, %d, %i, %x, %X, %o, %f, %e, %g with flags, width and precision'})")
            else:
                text += fmt[i]
                i += 1
        if text:
            pieces.append(text)
        if what == "PRINTF" and k != len(arg_nodes) or what == "FORMAT" and k > len(arg_nodes) and not manual:
            raise PlanError(f"{what}: the format has {k} placeholders for {len(arg_nodes)} arguments")
        for index, _ in holes:
            if index >= len(arg_nodes):
                raise PlanError(f'{what}: argument index "{index}" out of range')
        args = [self.expr(a, ctx) for a in arg_nodes]
        shown = []
        for index, spec in holes:
            a = args[index]
            if spec not in ("{}", "%s", "%d", "%i"):
                shown.append(formatted_value(a, spec))
                continue
            if a.type.kind not in ("string", "bool", "date") and not a.type.is_integer:
                raise UnsupportedError(f"{what} of a {a.type} value (its text may differ from DuckDB's)")
            if spec in ("%d", "%i") and a.type.kind in ("string", "date") or spec == "%s" and a.type.is_integer:
                raise PlanError(f"{what}: {spec} cannot format a {a.type} value")
            if spec in ("%d", "%i") and a.type.kind == "bool":  # printf('%d', TRUE) is 1
                a = E.make_func("cast", [a], (INT32,))
            shown.append(a)
        parts = [Lit(p, STRING) if isinstance(p, str) else
                 (shown[p] if shown[p].type.kind == "string" else E.make_func("cast", [shown[p]], (STRING,)))
                 for p in pieces] or [Lit("", STRING)]
        out = parts[0]
        for p in parts[1:]:
            out = E.make_func("concat", [out, p])
        out = out if out.type.kind == "string" else E.make_func("cast", [out], (STRING,))
        for j, a in enumerate(args):  # an argument no placeholder shows still makes the result NULL
            if j not in {index for index, _ in holes}:
                out = E.make_func("case", [E.make_func("is_null", [a]), Lit(None, STRING), out])
        return out

    @handles(exp.Trim)
    def _x_trim(self, n, ctx):
        chars = n.args.get("expression")
        if chars is not None and not (isinstance(chars, exp.Literal) and chars.is_string):
            raise UnsupportedError("TRIM with non-constant characters")
        pos = (n.text("position") or "BOTH").upper()
        op = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}.get(pos)
        if op is None:
            raise UnsupportedError(f"TRIM({pos} ...)")
        return E.make_func(op, [self.expr(n.this, ctx)], (chars.this if chars is not None else " ",))

    @handles(exp.StrToTime)
    def _x_strptime(self, n, ctx):
        """STRPTIME(text, format): a TIMESTAMP (formats of DuckDB's specifiers; a list of
        formats, zones and fractions are refused)."""
        fmt = n.args.get("format")
        if not (isinstance(fmt, exp.Literal) and fmt.is_string):
            raise UnsupportedError("STRPTIME with a format that is not one string constant")
        return E.make_func("strptime", [self.expr(n.this, ctx)], (fmt.this, bool(n.args.get("safe"))))


def _format_field(field: str) -> tuple[int | None, str]:
    """FORMAT's ``{index:spec}`` as (the argument's index or None, the spec as PRINTF's or
    ``{}``): ``{:d}``, ``{:0Nd}``, ``{:Nd}`` (integers) and ``{:.Nf}`` (floats and decimals)
    write as PRINTF's %d / %0Nd / %Nd / %.Nf do; other specs are refused."""
    m = re.fullmatch(r"(\d*)(?::(.*))?", field, re.S)
    if m is None:
        raise UnsupportedError(f"FORMAT placeholder {{{field}}}")
    index = int(m.group(1)) if m.group(1) else None
    spec = m.group(2)
    if not spec:
        return index, "{}"
    if spec == "d":
        return index, "%d"
    w = re.fullmatch(r"(0?)([1-9]\d{0,2})d", spec)
    if w:
        return index, f"%{w.group(1)}{w.group(2)}d"
    f = re.fullmatch(r"\.(\d{1,2})f", spec)
    if f:
        return index, f"%.{f.group(1)}f"
    raise UnsupportedError(f"FORMAT specifier {{:{spec}}} (only {{:d}}, {{:0Nd}}, {{:Nd}}, {{:.Nf}})")
