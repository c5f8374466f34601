"""Physical properties: how an operator's rows are spread over the ranks.

Every operator produces rows in one distribution and may need its input in another:

- ``single``: all rows on one rank (a one-rank run, a gathered result);
- ``hash(keys)``: each row on the rank its keys hash to (equal keys meet);
- ``broadcast``: every rank holds all rows (a small build side);
- ``any``: rows spread over the ranks in no particular way (each rank scans its share).

With one rank every operator is ``single`` and nothing moves: lowering gives the plans it
always gave. With several, lowering compares what an operator needs with what its input
produces; where they differ an exchange, a broadcast or a gather goes between them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Distribution:
    kind: str  # "single" | "hash" | "broadcast" | "any"
    keys: tuple = ()  # kind "hash": the expressions the rows are partitioned on

    def __str__(self) -> str:
        return f"hash({', '.join(map(str, self.keys))})" if self.kind == "hash" else self.kind


SINGLE = Distribution("single")
ANY = Distribution("any")
BROADCAST = Distribution("broadcast")


def hashed(keys) -> Distribution:
    return Distribution("hash", tuple(keys))
