"""What a command shows on stderr while it works, when stderr is a terminal (silent otherwise):
a status line with the elapsed time, and the scan's progress bar (bytes, rate, the bounding
stage, the time left)."""

from __future__ import annotations

import sys
import threading


class Status:
    """A live status line with elapsed time on stderr when it is a terminal; silent otherwise."""

    def __init__(self, text: str) -> None:
        self._cm = None
        if sys.stderr.isatty():
            from sluice.commands.terminal_widgets import status_line  # deferred: rich loads only for a terminal
            self._cm = status_line(text)

    def __enter__(self):
        if self._cm is not None:
            self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cm is not None:
            self._cm.__exit__(*exc)


class Progress:
    """Bytes scanned of bytes to scan, the rate, the fraction of the storage bound it reaches
    (the rate over the bandwidth ``sluice calibrate`` measured, when it has), the stage that
    bounds the run so far, and the time left from the measured rate -- binary units throughout,
    on stderr when it is a terminal; silent otherwise. Pass it as ``progress=``: the engine calls
    it with each scanned byte count and hands it the run's context (``attach``)."""

    def __init__(self, total: int, storage_bps: float | None = None, job=None) -> None:
        self._p = None
        self._ctx = None
        # In a job of several ranks (``job``: this rank's watchdog) the bar shows every rank's
        # scans: their bytes come with the watchdog's records, summed here twice a second.
        self._job = job
        self._stop = threading.Event()
        if sys.stderr.isatty() and total > 0:
            from sluice.commands.terminal_widgets import scan_bar  # deferred: rich loads only for a terminal
            self._p = scan_bar(storage_bps, self.bound)
            self._task = self._p.add_task("scan", total=total)

    @property
    def shows_stages(self) -> bool:
        """Whether the display is live (it names the bounding stage: reads are timed apart)."""
        return self._p is not None

    def attach(self, ctx) -> None:
        if self._ctx is not None and self._p is not None:
            self._p.reset(self._task)  # the query runs again (after the GPU ran out of memory)
        self._ctx = ctx

    def bound(self) -> str | None:
        if self._ctx is None:
            return None
        from sluice.analyze import stage_utilisation  # deferred: keeps `sluice rewrite` (its bar never attaches a run) free of torch
        return stage_utilisation(self._ctx)[1]

    def __enter__(self):
        if self._p is not None:
            self._p.__enter__()
            if self._job is not None:
                threading.Thread(target=self._follow_job, name="sluice-progress", daemon=True).start()
        return self

    def __call__(self, nbytes: int) -> None:
        if self._job is not None:
            self._job.scanned(nbytes)
        elif self._p is not None:
            self._p.advance(self._task, nbytes)

    advance = __call__

    def _follow_job(self) -> None:
        while not self._stop.wait(0.5):
            self._p.update(self._task, completed=self._job.job_scan()[0])

    def __exit__(self, *exc):
        self._stop.set()
        if self._p is not None:
            self._p.__exit__(*exc)

