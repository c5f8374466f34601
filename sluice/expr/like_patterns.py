"""SQL LIKE patterns in pyarrow's syntax (backslash escapes): shared by the translator (a
constant pattern, converted once) and the LIKE kernel (patterns from a column, converted per
distinct pattern). No heavy imports: the translator loads it eagerly."""

from __future__ import annotations

from sluice.errors import PlanError


def like_pattern(pattern: str, escape: str | None) -> str:
    """A SQL LIKE pattern as pyarrow's ``match_like`` reads it (backslash escapes).

    In SQL a backslash is an ordinary character unless it is the ESCAPE character."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            if i + 1 >= len(pattern):
                raise PlanError("LIKE pattern ends with its ESCAPE character")
            nxt = pattern[i + 1]
            out.append("\\" + nxt if nxt in "%_\\" else nxt)
            i += 2
            continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)
