"""The rich widgets behind :mod:`sluice.commands.progress`: a status line and the scan's bar.
Imported only when stderr is a terminal -- rich takes a tenth of a second or more to load,
which a query whose stderr goes to a file or a pipe would pay for nothing."""

from __future__ import annotations

from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, ProgressColumn, TimeRemainingColumn
from rich.text import Text

from sluice.metrics import fmt_rate


def status_line(text: str):
    """A live status line with the elapsed time on stderr (a context manager)."""
    return Console(stderr=True).status(text)


def scan_bar(storage_bps: float | None, bound: Callable[[], str | None]) -> Progress:
    """The scan's bar on stderr: bytes, the rate (and its share of T_min's storage rate when
    ``sluice calibrate`` measured one), the stage ``bound()`` names, the time left."""

    class Rate(ProgressColumn):
        def render(self, task):
            if not task.speed:
                return Text("?", style="progress.data.speed")
            text = fmt_rate(task.speed)
            if storage_bps:
                text += f" ({task.speed / storage_bps:.0%} of T_min)"
            return Text(text, style="progress.data.speed")

    class Bound(ProgressColumn):
        def render(self, task):
            stage = bound()
            return Text(f"bound by {stage}" if stage else "", style="progress.description")
    return Progress("scanning", BarColumn(), DownloadColumn(binary_units=True), Rate(), Bound(),
                    TimeRemainingColumn(), "left", console=Console(stderr=True), transient=True)
