"""EXPLAIN ANALYZE: the physical plan with per-operator rows, bytes, time and bandwidth, the
busy time of each data-path stage, the stage that bounds the query, and the T_min bound
(bytes read / storage bandwidth, bytes transferred / host->device bandwidth) from
``sluice calibrate``."""

from __future__ import annotations

from pathlib import Path

from sluice.adapt.calibration import load_calibration
from sluice.exec.context import ExecContext
from sluice.exec.operators import Operator, ScanOp
from sluice.metrics import fmt_bytes, fmt_rate
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.sort import SortOp
from sluice.io.memory import default_host_limit


def _scan_stats(op: Operator, ctx: ExecContext):
    runs = [ctx.runs.get(o) for o in op.walk() if isinstance(o, ScanOp)]
    return [r.reader.stats for r in runs if r is not None and r.reader is not None]


def stage_utilisation(ctx: ExecContext) -> tuple[dict, str]:
    """Busy seconds, bytes and utilisation per data-path stage so far, and the stage that
    bounds the run (the most utilised); called while a query runs too (the progress bar)."""
    rec = ctx.recorder
    wall = max(rec.wall, 1e-9)
    threads = max(1, ctx.config.io_threads) if ctx.config.on("prefetch") else 1
    events = list(rec.events)  # I/O threads append while a query runs
    busy = {s: 0.0 for s in ("read", "decode", "h2d")}
    nbytes = {s: 0 for s in busy}
    main_other = 0.0
    for e in events:
        if e.stage in busy:
            busy[e.stage] += e.end - e.start
            nbytes[e.stage] += e.nbytes
        if e.stage in ("wait", "read", "decode", "h2d") and e.thread == "MainThread":
            main_other += e.end - e.start
    stages = {
        "read": {"busy": busy["read"], "bytes": nbytes["read"], "capacity": threads},
        "decode": {"busy": busy["decode"], "bytes": nbytes["decode"], "capacity": threads},
        "h2d": {"busy": busy["h2d"], "bytes": nbytes["h2d"], "capacity": 1},
        "compute": {"busy": max(0.0, wall - main_other), "bytes": 0, "capacity": 1},
    }
    net = [e for e in events if e.stage == "network"]
    if net:  # transfers between ranks, from issue to completion (one at a time per rank)
        stages["network"] = {"busy": sum(e.end - e.start for e in net), "bytes": sum(e.nbytes for e in net),
                             "capacity": 1}
    for st in stages.values():
        st["util"] = st["busy"] / (wall * st["capacity"])
    return stages, max(stages, key=lambda k: stages[k]["util"])


def stage_summary(op: Operator, ctx: ExecContext) -> dict:
    """Busy seconds, bytes and utilisation per stage, and the bounding stage."""
    scans = _scan_stats(op, ctx)
    stages, bound = stage_utilisation(ctx)
    return {"wall": max(ctx.recorder.wall, 1e-9), "stages": stages, "bound": bound, "scans": scans,
            "bytes_read": sum(s.bytes_read for s in scans), "bytes_h2d": ctx.recorder.total_bytes("h2d")}


def t_min(summary: dict, data_dir: Path, device: str, ranks: list[dict] | None = None) -> dict | None:
    """The bound: the busiest rank's bytes read over the storage bandwidth, bytes copied over
    the host->device bandwidth and, with several ranks, the bytes its link carries one way
    (:func:`_exchanged`) over the all-to-all bandwidth ``sluice calibrate --ranks N`` measured."""
    cal = load_calibration(data_dir)
    if cal is None:
        return None
    read = max([summary["bytes_read"]] + [r["bytes_read"] for r in ranks or []])
    a2a = (cal.get("all_to_all_bps") or {}).get(str(len(ranks))) if ranks else None
    out = {}
    for kind in ("cached", "cold"):
        bw = cal.get(f"read_{kind}_bps")
        if not bw:
            continue
        t = read / bw
        h2d = cal.get("h2d_bps")
        if device.startswith("cuda") and h2d:
            t = max(t, summary["bytes_h2d"] / h2d)
        if a2a:
            t = max(t, max(_exchanged(r) for r in ranks) / a2a)
        out[kind] = (t, t / summary["wall"] if summary["wall"] else 0.0)
    return out


def _exchanged(rank: dict) -> int:
    """The bytes one rank's link must carry one way: the larger of what it sent to other ranks
    and what it received from them. The all-to-all rate (``sluice calibrate --ranks N``) is the
    bytes a rank sends per second while it receives as much (links are full duplex), so the
    network term is this over that rate (PystachIO's T_network), not sent + received over it,
    which counted each byte twice."""
    sent = sum(sum(e["bytes_sent"]) for e in rank["exchanges"])
    received = sum(e["bytes_received"] for e in rank["exchanges"])
    return max(sent, received)


def ranks_report(ranks: list[dict]) -> list[str]:
    """``--analyze`` with several ranks: what each rank did, and each exchange's size matrix
    (rows from each rank to each rank: skew shows as one heavy column)."""
    lines = [f"ranks: {len(ranks)}",
             f"  {'rank':>4} {'wall':>9} {'rows scanned':>13} {'read':>10} {'sent':>10} {'received':>10} "
             f"{'network busy':>13} {'peak memory':>12}"]
    for i, r in enumerate(ranks):
        sent = sum(sum(e["bytes_sent"]) for e in r["exchanges"])
        got = sum(e["bytes_received"] for e in r["exchanges"])
        net = sum(e["network_s"] for e in r["exchanges"])
        lines.append(f"  {i:>4} {r['wall_s'] * 1000:>7.1f}ms {r['rows_scanned']:>13,} {fmt_bytes(r['bytes_read']):>10} "
                     f"{fmt_bytes(sent):>10} {fmt_bytes(got):>10} {net * 1000:>11.1f}ms {fmt_bytes(r['peak_memory']):>12}")
    for k, e in enumerate(ranks[0]["exchanges"]):
        per = [r["exchanges"][k] for r in ranks]
        moved = sum(sum(x["bytes_sent"]) for x in per)
        stage = max(x["stage_s"] for x in per)
        lines.append(f"  {e['op']}: {sum(x['rows_sent'] for x in per):,} rows, {fmt_bytes(moved)} between ranks "
                     f"in {max(x['rounds'] for x in per)} rounds; stage {stage * 1000:.1f} ms "
                     f"({fmt_rate(moved / stage if stage > 0 else 0.0)}), network wait "
                     f"{max(x['network_s'] for x in per) * 1000:.1f} ms on the slowest rank")
        lines.append("      " + "rows from \\ to".rjust(15) + "".join(f"{d:>12}" for d in range(len(ranks))))
        for i, x in enumerate(per):
            lines.append(f"      {i:>15}" + "".join(f"{v:>12,}" for v in x["rows_to"]))
        raw = sum(x.get("bytes_raw", 0) for x in per)
        if e.get("codec", "tensor") != "tensor" and raw:
            lines.append(f"      wire: {fmt_bytes(raw)} before compression; rounds per codec by rank: "
                         + "; ".join(f"{i}: {x['codec'] or 'none'}" for i, x in enumerate(per)))
    return lines


def memory_plan(op: Operator, config) -> list[str]:
    """EXPLAIN's memory plan: per materialising operator, its estimated state against the host
    budget and whether it may spill."""
    limit = config.host_memory_limit or default_host_limit()
    dirs = ", ".join(config.spill_dirs())
    lines = [f"Memory plan: host budget {fmt_bytes(limit)} (host_memory_limit), spilling to {dirs}"
             + (" -- force_spill: every operator spills from its first page" if config.force_spill else "")]
    scans = 0
    for o in op.walk():
        if isinstance(o, ScanOp):
            scans += 1
        if o.state_estimate is None:
            continue
        rows, width = o.state_estimate
        nbytes = rows * width
        what = {"HashJoin": "build side", "AsofJoin": "right side", "HashAggregate": "groups", "Sort": "rows",
                "Shared": "rows"}.get(o.label, "rows")
        if isinstance(o, SortOp) and o.limit is not None:
            how = "top-k: keeps only offset + limit rows, no spilling needed"
        elif isinstance(o, HashJoinOp) and not o.probe_keys:
            how = "no join keys: held in memory (cannot spill)"
        elif nbytes > limit:
            how = "exceeds the budget: will spill"
        elif nbytes > limit / 4:
            how = "may spill (over a quarter of the budget: partitioned)"
        else:
            how = "fits; may spill if the estimate is low"
        lines.append(f"  {o.label:<13} ~{rows:,.0f} {what} x {width} B = {fmt_bytes(nbytes)} "
                     f"({nbytes / limit:.1%} of budget): {how}")
    if scans:
        share = min(config.read_ahead_bytes, limit // (4 * scans))
        lines.append(f"  Scan queues   {scans} x up to {fmt_bytes(share)} of read-ahead")
    return lines


def _memory_line(st) -> str:
    parts = [f"peak reserved {fmt_bytes(st.peak_reserved)}"]
    if st.partitions:
        parts.append(f"{st.partitions} partitions ({st.spilled_partitions} spilled"
                     + (f", split {st.levels} levels deep" if st.levels else "") + ")")
    if st.spilled_bytes:
        parts.append(f"spilled {fmt_bytes(st.spilled_bytes)} in {st.spilled_pages} pages, "
                     f"read back {fmt_bytes(st.read_bytes)} in {st.read_pages} pages")
    return "memory: " + ", ".join(parts)


def _tree(op: Operator, ctx: ExecContext, depth: int, lines: list[str]) -> None:
    run = ctx.runs.get(op)
    st = run.stats if run is not None else None
    desc = op.describe()
    if st is not None:
        # Own time: inclusive time minus the time spent pulling from children.
        kids = [ctx.runs[c].stats for c in op.children if c in ctx.runs and ctx.runs[c].stats is not None]
        own = st.inclusive_s - sum(k.inclusive_s for k in kids)
        own = max(0.0, own)
        rate = st.nbytes / own if own > 0 else 0.0
        desc += (f"  [rows={st.rows:,} chunks={st.chunks} out={fmt_bytes(st.nbytes)} "
                 f"time={own * 1000:.1f}ms ({fmt_rate(rate)})]")
    st = run.memory if run is not None else None
    if st is not None:
        desc += f"\n{'  ' * (depth + 1)}  {_memory_line(st)}"
    ex = run.exchange if run is not None else None
    if ex is not None:
        desc += (f"\n{'  ' * (depth + 1)}  this rank: sent {ex.rows_sent:,} rows ({fmt_bytes(sum(ex.bytes_sent))} "
                 f"to other ranks), received {ex.rows_received:,} rows ({fmt_bytes(ex.bytes_received)}) in "
                 f"{ex.rounds} rounds; input {ex.input_s * 1000:.1f} ms, partitioning "
                 f"{ex.partition_s * 1000:.1f} ms, network wait "
                 f"{ex.network_s * 1000:.1f} ms")
    if run is not None and run.reader is not None:
        s = run.reader.stats
        desc += (f"\n{'  ' * (depth + 1)}  read {fmt_bytes(s.bytes_read)} compressed, decoded "
                 f"{fmt_bytes(s.bytes_decoded)}, {s.rows:,} rows, row groups {s.row_groups - s.pruned}/"
                 f"{s.row_groups} (pruned {s.pruned}), waited {s.wait_s * 1000:.1f}ms, "
                 f"peak buffered {fmt_bytes(s.peak_buffered)}"
                 + (f" in {s.peak_in_flight} task(s) at once" if s.peak_in_flight else "")
                 + (f", {s.merged} task(s) merged into the chunk before them" if s.merged else ""))
        if s.modes and (len(s.modes) > 1 or "direct" not in s.modes or s.switches):
            desc += f"\n{'  ' * (depth + 1)}  {_modes_line(s)}"
        if s.decoder != "arrow":
            left = "; ".join(f"{c} ({why})" for c, why in s.fallbacks.items())
            desc += f"\n{'  ' * (depth + 1)}  decoder {s.decoder}" + (
                f", left to pyarrow: {left}" if left else ", every column on the device decoder")
            if s.pages_device_decompressed or s.pages_host_decompressed:
                why = ", ".join(f"{n:,} {w}" for w, n in s.host_decompress_why.items())
                desc += (f"; pages decompressed: {s.pages_device_decompressed:,} on the device (nvCOMP), "
                         f"{s.pages_host_decompressed:,} on the host" + (f" ({why})" if why else ""))
            if s.reads:
                desc += f"; reads: {s.reads}"
            if s.pages_selected:
                desc += (f"; staging skipped {s.pages_skipped:,} of {s.pages_selected:,} data pages "
                         f"({fmt_bytes(s.page_bytes_skipped)} compressed) holding no kept row")
        if s.cache_hits or s.cache_misses:
            desc += (f"\n{'  ' * (depth + 1)}  column cache: {s.cache_hits:,} hits, {s.cache_misses:,} misses "
                     f"(row groups x columns), served {fmt_bytes(s.cache_hit_bytes)}, kept "
                     f"{fmt_bytes(s.cache_stored_bytes)}")
        for spec in op.runtime_filters:
            if spec in ctx.filters:
                desc += f"\n{'  ' * (depth + 1)}  {ctx.filters[spec].describe()}"
        for spec in getattr(op, "minmax_bounds", ()):
            if spec in ctx.bounds:
                desc += f"\n{'  ' * (depth + 1)}  {ctx.bounds[spec].describe()}"
    lines.append("  " * depth + desc)
    for c in op.children:
        _tree(c, ctx, depth + 1, lines)


def _modes_line(s) -> str:
    """The scan's data-movement modes: per mode the slices, the end-to-end rate and the rows
    kept; the policy's decisions (sample / exploit / drift / keep) by slice."""
    parts = []
    for mode, m in s.modes.items():
        kept = m.rows_out / m.rows_in if m.rows_in else 0.0
        parts.append(f"{mode} {m.slices} slices {m.rate / 1e6:.2f} Mrows/s kept {kept:.1%}")
    line = "modes: " + ", ".join(parts)
    if s.switches:
        steps = []
        for sw in s.switches:
            rates = (" (" + ", ".join(f"{k} {v / 1e6:.2f}" for k, v in sw.rates.items()) + " Mrows/s)"
                     if sw.rates else "")
            steps.append(f"{sw.reason} {sw.mode}@{sw.slice}{rates}")
        line += "; policy: " + ", ".join(steps)
    return line


def analyze_report(op: Operator, ctx: ExecContext, data_dir: Path) -> str:
    summ = stage_summary(op, ctx)
    lines: list[str] = []
    _tree(op, ctx, 0, lines)
    lines.append("")
    lines.append(f"total {summ['wall'] * 1000:.1f} ms on {ctx.device} (pipeline={ctx.config.pipeline}); "
                 f"read {fmt_bytes(summ['bytes_read'])} from storage")
    for name, s in summ["stages"].items():
        if name == "h2d" and ctx.device.type != "cuda":
            continue
        bw = f", {fmt_rate(s['bytes'] / s['busy'])} while busy" if s["busy"] > 0 and s["bytes"] else ""
        lines.append(f"  {name:<8} busy {s['busy'] * 1000:8.1f} ms  utilisation {s['util'] * 100:5.1f}% "
                     f"of {s['capacity']} thread(s){bw}")
    lines.append(f"  bound by: {summ['bound']}")
    lines.append(f"  memory: peak {fmt_bytes(ctx.memory.peak)} reserved of the {fmt_bytes(ctx.memory.limit)} "
                 f"host budget")
    cache = ctx.column_cache
    if cache is not None and (ctx.cache_on or len(cache)):
        c = cache.counters
        lines.append(f"  column cache: {fmt_bytes(cache.bytes)} in {len(cache):,} entries of a "
                     f"{fmt_bytes(cache.limit)} limit on {ctx.device}; over the connection {c.hits:,} hits, "
                     f"{c.misses:,} misses, {fmt_bytes(c.evicted_bytes)} evicted ({c.evictions:,} entries)")
    if ctx.oom_reruns:
        lines.append(f"  device out of memory: rerun {len(ctx.oom_reruns)}x, last under a "
                     f"{fmt_bytes(ctx.oom_reruns[-1])} device budget")
    sm = ctx.spill_manager
    if sm is not None and sm.pages_written:
        wbw = sm.bytes_stored / sm.write_s if sm.write_s else 0.0
        rbw = sm.bytes_read / sm.read_s if sm.read_s else 0.0
        ratio = sm.bytes_written / sm.bytes_stored if sm.bytes_stored else 1.0
        lines.append(f"  spill: wrote {fmt_bytes(sm.bytes_written)} of pages as {fmt_bytes(sm.bytes_stored)} "
                     f"({ratio:.2f}x; codecs {sm.codec.summary()}) at {fmt_rate(wbw)}, "
                     f"read back {fmt_bytes(sm.bytes_read)} at {fmt_rate(rbw)}, {sm.files} files")
    ranks = ctx.rank_stats
    if ranks:
        lines.extend(ranks_report(ranks))
    tm = t_min(summ, data_dir, str(ctx.device), ranks)
    if tm is None:
        lines.append("  T_min: run `sluice calibrate --data DIR` to measure this machine's bandwidths")
    else:
        for kind, (t, frac) in tm.items():
            lines.append(f"  T_min ({kind} storage) = {t * 1000:.1f} ms; achieved {frac * 100:.1f}% of the bound")
        cal = load_calibration(data_dir) or {}
        if ranks and str(len(ranks)) not in (cal.get("all_to_all_bps") or {}):
            lines.append(f"  T_min has no network term: run `sluice calibrate --data DIR --ranks {len(ranks)}`")
    return "\n".join(lines)


def plot_timeline(op: Operator, ctx: ExecContext, path: str, title: str = "") -> None:
    """Bandwidth per stage over time, like the papers' figures (PNG via matplotlib)."""
    import matplotlib  # deferred: matplotlib only for this call
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib only for this call
    rec = ctx.recorder
    centres, bw, util = rec.timeline(bins=min(400, max(20, int(rec.wall / 0.005))))
    summ = stage_summary(op, ctx)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    colors = {"read": "tab:blue", "decode": "tab:orange", "h2d": "tab:green", "spill_write": "tab:brown",
              "spill_read": "tab:pink", "network": "tab:cyan"}
    for stage, c in colors.items():
        if any(bw[stage]):
            ax1.plot([t * 1000 for t in centres], [b / 2**30 for b in bw[stage]], label=stage, color=c)
    ax1.set_ylabel("GiB/s")
    ax1.legend(loc="upper right")
    ax1.set_title(title or f"{summ['wall'] * 1000:.0f} ms, bound by {summ['bound']}")
    compute = [max(0.0, 1.0 - w) for w in util["main_other"]]
    ax2.plot([t * 1000 for t in centres], compute, label="compute busy", color="tab:red")
    io_threads = max(1, ctx.config.io_threads)
    ax2.plot([t * 1000 for t in centres], [(a + b) / io_threads for a, b in zip(util["read"], util["decode"])],
             label="I/O threads busy", color="tab:purple")
    ax2.set_ylim(0, 1.05)
    ax2.set_xlabel("time (ms)")
    ax2.set_ylabel("utilisation")
    ax2.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)
