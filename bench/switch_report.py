"""The "Adaptive switch" section of docs/benchmarks.md (scripts/run-bench's
"switch" part, rendered by report.switch_section): the throughput dip and the
latency of a keep-alive load across switches (bench/switch_dip.py), and the
time to move idle connections (bench/transplant_move.py). It sits between its
own markers, so a run with BENCH_SWITCH=0 keeps it as it is.
"""
import statistics

SWITCH_BEGIN = "<!-- adaptive-switch: begin (scripts/run-bench writes this section; BENCH_SWITCH=0 keeps it) -->"
SWITCH_END = "<!-- adaptive-switch: end -->"
LINGER_S = 1.5  # weir-demo's default --linger-ms


def _pc(v):
    return "–" if v is None else f"{v:.0%}"


def _ms(us):
    return "–" if us is None else f"{us / 1000:.2f}"


def _back(ms, limit):
    return f"> {limit} ms" if ms is None else f"{ms} ms"


def _switch_rows(dip):
    """One row per direction: the worst of its switches (lowest fraction,
    longest recovery, highest latency), the medians of steady and plateau."""
    rows = []
    for d in dict.fromkeys((s["from"], s["to"]) for s in dip["per_switch"]):
        sw = [s for s in dip["per_switch"] if (s["from"], s["to"]) == d]
        limit = min(s["transition_ms"] for s in sw)
        back = None if any(s["recovery_ms"] is None for s in sw) else max(s["recovery_ms"] for s in sw)
        plateau = statistics.median(s["plateau"] for s in sw)
        back_txt = _back(back, limit)
        if plateau < 0.95:
            bp = [s["recovery_plateau_ms"] for s in sw]
            back_txt += f" (to the plateau: {_back(None if None in bp else max(bp), limit)})"
        rows.append(
            f"| {d[0]} → {d[1]} | {len(sw)} | {statistics.median(s['steady_rps'] for s in sw):,.0f} "
            f"| {_pc(min(s['worst_bucket'] for s in sw))} ({_pc(min(s['steady_worst_bucket'] for s in sw))}) "
            f"| {_pc(min(s['worst_window'] for s in sw))} ({_pc(min(s['steady_worst_window'] for s in sw))}) "
            f"| {back_txt} | {_pc(plateau)} "
            f"| {_ms(max(s['around_p999_us'] or 0 for s in sw))} ({_ms(max(s['steady_p999_us'] or 0 for s in sw))}) "
            f"| {_ms(max(s['around_max_us'] or 0 for s in sw))} ({_ms(max(s['steady_max_us'] or 0 for s in sw))}) "
            f"| {sum(1 for s in sw if s['noisy'])} |")
    return rows


def section(sw):
    """The page's "Adaptive switch" section (between its markers, so a run
    with BENCH_SWITCH=0 keeps it): the dip across switches and the move time."""
    m = sw["machine"]
    dip = sw.get("dip") or {}
    out = [SWITCH_BEGIN, "## Adaptive switch", "",
           f"Measured {sw['date']} by `make bench` (scripts/run-bench, part `switch`) at `{m.get('weir_commit', '?')}`"
           f" on {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}."
           + (" **A quick smoke run (BENCH_QUICK=1): too short to quote.**" if sw.get("quick") else ""), ""]
    if "error" in dip:
        out += [f"**The switch-dip run failed**: {dip['error']}", ""]
    elif dip:
        ps = dip["per_switch"]
        out += [
            "### Throughput and latency across a switch", "",
            f"`{dip['cmd']}` serves `{dip['load']}` (bench/kaload/main.c): {dip['conns']} keep-alive connections "
            "on one thread, one request in flight on each, the next sent as soon as the answer is in; every "
            "request is logged with the time it was sent and its latency (until the last byte of the answer). "
            f"bench/switch_dip.py sends SIGWINCH {dip['switches']} times, {dip['interval_s']:g} s apart from "
            f"{dip['lead_s']:g} s into the load, so the active engine alternates between the backends "
            "(`weir_engine_switch`: resume the standby, transplant every connection at its next request "
            f"boundary, pause the old engine with its linger). Completed requests are counted in "
            f"{dip['bucket_ms']} ms buckets aligned to each signal."
            + (f" weir-demo's pause linger is {LINGER_S:g} s, so every switch after the first comes back to an "
               "engine whose listener still lingers (a flap, docs/transplant.md); BENCH_SWITCH_INTERVAL=2 makes "
               "every switch one to a closed standby." if dip["interval_s"] < LINGER_S else "")
            + " The columns:", "",
            f"- *steady*: requests/s of the {dip['steady_s']:g} s ending {dip['guard_ms']} ms before the switch; "
            "in brackets, that stretch's own worst bucket and worst window, the noise a dip must stand out of",
            f"- *worst {dip['bucket_ms']} ms*, *worst {dip['window_ms']} ms*: the lowest bucket and "
            f"{dip['window_ms']} ms window in the transition (from the signal to the next steady stretch, "
            f"{min(s['transition_ms'] for s in ps)} ms), as a share of steady",
            f"- *back within 5 %*: where the first {dip['window_ms']} ms window that carries 95 % of steady's "
            "requests starts; where the new engine settles lower (*plateau*, the next steady stretch over "
            "this one, below 95 %: the other backend serving fewer requests/s on this machine), also the "
            "time back to within 5 % of its plateau",
            "- *latency*: the requests in flight at the switch or sent in the transition, against (in "
            "brackets) those sent in the steady stretch; p99.9 and max in ms",
            "- *noisy*: switches during which others' work took more than "
            f"{sw['max_others']:.0%} of a core (/proc/stat, 100 ms samples); a run with one is repeated after "
            "a wait for quiet (BENCH_RETRIES times, 3 unless quick) and the last one kept", "",
            f"| switch | switches | steady req/s, median | worst {dip['bucket_ms']} ms (steady's) "
            f"| worst {dip['window_ms']} ms (steady's) | back within 5 %, slowest | plateau, median "
            "| p99.9 latency, ms (steady) | max latency, ms (steady) | noisy |",
            "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
        out += _switch_rows(dip)
        by = {}
        for s in ps:
            by.setdefault(s["from"], []).append(s["steady_rps"])
        out += ["", "Steady requests/s of each backend here, median (min–max) of its stretches: " + "; ".join(
            f"{b} {statistics.median(v):,.0f} ({min(v):,}–{max(v):,}, {len(v)})" for b, v in by.items())
            + ". The client shares the two cores, so a backend that needs less CPU per request leaves kaload "
            "more: a plateau below 100 % can be the other backend's own level, not a dip that lasts."]
        out += ["", "Every switch:", "",
                f"| at | switch | steady req/s | worst {dip['bucket_ms']} ms (at) | worst {dip['window_ms']} ms "
                "| back within 5 % | plateau | p99.9 / max, ms | steady p99.9 / max, ms | others' CPU |",
                "|---:|---|---:|---:|---:|---|---:|---:|---:|---:|"]
        for s in ps:
            back = _back(s["recovery_ms"], s["transition_ms"])
            if s["plateau"] < 0.95:
                back += f" (plateau: {_back(s['recovery_plateau_ms'], s['transition_ms'])})"
            out.append(f"| {s['at_s']:.2f} s | {s['from']} → {s['to']} | {s['steady_rps']:,} "
                       f"| {_pc(s['worst_bucket'])} (+{s['worst_bucket_at_ms']} ms) | {_pc(s['worst_window'])} "
                       f"| {back} | {_pc(s['plateau'])} | {_ms(s['around_p999_us'])} / {_ms(s['around_max_us'])} "
                       f"| {_ms(s['steady_p999_us'])} / {_ms(s['steady_max_us'])} "
                       f"| {_pc(s['others_share'])}{' (noisy)' if s['noisy'] else ''} |")
        errs = ", ".join(f"{k} {v}" for k, v in dip["errors"].items() if v) or "none"
        led = dip.get("ledger") or {}
        ledger = "; ".join(
            f"{eng} engine ({led.get('active_backend') if eng == 'active' else ps[-1]['from']}): detached "
            f"{e['transplant_detached']}, adopted {e['transplant_adopted']}, refused {e['transplant_refused']}, "
            f"in flight {e['transplant_in_flight']}" for eng in ("active", "standby") if (e := led.get(eng)))
        out += ["",
                f"- {dip['requests']:,} requests in {dip['duration_s']:.1f} s; errors (failed, reset, closed or bad "
                f"requests, a request unanswered for 1 s at the end, a switch not made): "
                f"**{dip['error_total']}** ({errs}); reconnects {dip['reconnects']}"
                + ("" if dip.get("attempts", 1) == 1 else f"; kept attempt {dip['attempts']}"),
                f"- ledger on SIGHUP after the load: {'balanced' if dip['ledger_ok'] else '**not balanced**'} "
                f"(detached = adopted + refused, in flight 0, on both engines; {dip['ledger']['switches']} "
                f"switches counted): {ledger or 'not read'}",
                f"- the raw buckets (`series`, {dip['bucket_ms']} ms from the start of the load) and CPU samples "
                "are in build/bench/results.json under `switch`", ""]
    moves = sw.get("move") or []
    if moves or sw.get("move_skipped"):
        out += [f"### Moving {sw['move_conns']:,} idle connections", "",
                f"bench/transplant_move.py: build/bench/idle holds {sw['move_conns']:,} keep-alive connections that "
                "each served one GET; SIGWINCH, then SIGHUP polled until the new active engine holds them all "
                "(the polling is counted: an upper bound). The same connections move back and forth, "
                f"{sw['move_runs']} times each way, each move after the previous engine's 1.5 s linger has "
                "ended (so never to a standby still lingering); the ledger is counted per move.", ""]
        if sw.get("move_skipped"):
            out += [f"Skipped: {sw['move_skipped']}.", ""]
    if moves:
        out += ["| move | time, ms, median (min–max) | runs | ledger of the engine left (every run) "
                f"| < {sw['move_target_ms']} ms |", "|---|---:|---:|---|:---:|"]
        for src in dict.fromkeys(x["from"] for x in moves):
            ok = [x for x in moves if x["from"] == src and "ms" in x]
            failed = len([x for x in moves if x["from"] == src and "ms" not in x])
            if not ok:
                err = next(x["error"] for x in moves if x["from"] == src)
                out.append(f"| {src} → ? | failed: {err} | 0 | – | n/a |")
                continue
            t = [x["ms"] for x in ok]
            leds = dict.fromkeys(f"detached {e['transplant_detached']:,}, adopted {e['transplant_adopted']:,}, "
                                 f"refused {e['transplant_refused']}, in flight {e['transplant_in_flight']}"
                                 for e in (x["ledger"] for x in ok))
            out.append(f"| {src} → {ok[0]['to']} | {statistics.median(t):.1f} ({min(t):.1f}–{max(t):.1f}) "
                       f"| {len(ok)}{f' ({failed} failed)' if failed else ''} "
                       f"| {'; '.join(leds)}{'' if all(x['ok'] for x in ok) else ' **not balanced**'} "
                       f"| {'yes' if max(t) < sw['move_target_ms'] and not failed else '**no**'} |")
        out.append("")
    out += ["Re-run: `BENCH_PARTS=switch scripts/run-bench` (this part alone: build/bench/benchmarks-partial.md), "
            "or `python3 bench/switch_dip.py` and `python3 bench/transplant_move.py epoll 10000` by hand.",
            SWITCH_END]
    return "\n".join(out)
