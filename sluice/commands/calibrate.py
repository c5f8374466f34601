"""``sluice calibrate``: the storage read rate (cold and page-cached), host -> device bandwidth
and, with ``--ranks N``, the all-to-all rate of N local ranks, saved for T_min."""

from __future__ import annotations

from pathlib import Path

from sluice.adapt.calibration import cache_file, calibrate, save_all_to_all
from sluice.commands.progress import Status
from sluice.devices import resolve_device
from sluice.errors import ConfigError, DataError
from sluice.launch import run_job
from sluice.metrics import fmt_rate


def run(args, argv: list[str]) -> int:
    """Measure, print and save the rates."""
    if not Path(args.data).is_dir():
        raise DataError(f"data directory {args.data} does not exist")
    dev = resolve_device(args.device or "auto")
    with Status(f"reading Parquet files under {args.data} ..."):
        r = calibrate(args.data, dev)
    print(f"storage read, cold:         {fmt_rate(r['read_cold_bps'])} ({r['files']} files, "
          f"{r['bytes'] / 2**20:.0f} MiB)")
    print(f"storage read, page-cached:  {fmt_rate(r['read_cached_bps'])}")
    print(f"host -> device:             {fmt_rate(r['h2d_bps']) if r['h2d_bps'] else 'n/a (' + str(dev) + ')'}")
    if args.ranks is not None:
        if args.ranks < 2:
            raise ConfigError(f"--ranks must be at least 2 to measure an all-to-all, not {args.ranks}")
        status: dict = {}
        with Status(f"measuring all-to-all between {args.ranks} ranks ..."):
            run_job(args.ranks, {"kind": "bandwidth"}, status=status)
        rates = {int(k): v for k, v in status["bandwidth"].items()}
        save_all_to_all(args.data, args.ranks, rates)
        print(f"all-to-all, {args.ranks} ranks:     " + ", ".join(
            f"{fmt_rate(v)} at {k >> 10} KiB" for k, v in sorted(rates.items())) + " per rank to the others")
    print(f"saved to {cache_file()}")
    return 0

