"""Scan of a table of CSV files (sluice.io.csv): each file's blocks as they are parsed,
cut to ``chunk_rows``, with the pushed filter applied as a Parquet scan applies it."""

from __future__ import annotations

from dataclasses import dataclass

from sluice.chunk import Chunk
from sluice.expr.evaluate import evaluate_predicate
from sluice.exec.operators import Operator
from sluice.io.csv import read_csv_batches
from sluice.arrow import arrow_to_column, to_device
from sluice.catalog import TableInfo
from sluice.expr.nodes import Expr


@dataclass(eq=False)
class CsvScanOp(Operator):
    table: TableInfo
    columns: dict[str, str]  # internal name -> CSV column
    filter: Expr | None
    outputs: tuple[str, ...] | None = None
    label = "CsvScan"

    def describe(self) -> str:
        f = f" filter={self.filter}" if self.filter is not None else ""
        return f"CsvScan {self.table.name} [{', '.join(self.columns.values())}]{f} files={len(self.table.files)}"

    def execute(self, ctx):
        wanted = sorted(set(self.columns.values())) or self.table.arrow_schema.names[:1]
        step = ctx.config.chunk_rows
        seq = 0
        for path in self.table.files:
            for batch in read_csv_batches(self.table, path, wanted):
                if ctx.progress is not None:
                    ctx.progress(batch.nbytes)
                for start in range(0, batch.num_rows, step):
                    part = batch.slice(start, step)
                    n = part.num_rows
                    decoded = {c: arrow_to_column(part.column(c), self.table.types[c]) for c in set(self.columns.values())}
                    if ctx.device.type == "cuda":
                        decoded = {c: to_device(col, ctx.device) for c, col in decoded.items()}
                    cols = {k: decoded[v] for k, v in self.columns.items()}
                    out = Chunk(cols, n, seq, ctx.device)
                    seq += 1
                    if self.filter is not None:
                        mask = evaluate_predicate(self.filter, out)
                        if self.outputs is not None:
                            out = Chunk({k: cols[k] for k in self.outputs}, n, out.seq, ctx.device)
                        out = out.filter(mask) if out.columns else Chunk({}, int(mask.sum()), out.seq, ctx.device)
                    if out.num_rows:
                        yield out
