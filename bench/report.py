"""Summaries, ratios, targets and the Markdown report for scripts/run-bench."""
import statistics

import switch_report
import uring

LABEL = {"weir": "weir-demo", "weir-uring": "weir-uring", "nginx": "nginx", "floor": "floor",
         "uring-floor": "uring-floor", "weir-base": "weir-base"}
MEMORY_TARGET = 1024  # bytes per held connection, silent or idle
SCENARIO_TEXT = {
    "keep-alive": "keep-alive, 64 connections",
    "keep-alive-1000": "keep-alive, 1,000 connections",
    "close": "`Connection: close`, 64 connections",
    "pipeline-16": "16-deep pipelining, 64 connections",
}


def _summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def _ratio(a, b):
    return a / b if a is not None and b else None


def summarize(results):
    thr = {}
    for scen, by_kind in results["runs"].items():
        thr[scen] = {}
        for kind, runs in by_kind.items():
            thr[scen][kind] = {
                "rps": _summary([r["rps"] for r in runs]),
                "cpu": _summary([r["cpu_us_per_req"] for r in runs]),
                "socket_errors": sum(r["socket_errors"] for r in runs),
                "non2xx": sum(r["non2xx"] for r in runs),
                "others": _summary([r.get("others_share", 0.0) * 100 for r in runs]),
                "noisy": sum(1 for r in runs if r.get("noisy")),
            }
    idle = {k: _summary([r["bytes_per_conn"] for r in v]) for k, v in results["idle"].items()}
    silent = {k: _summary([r["bytes_per_conn"] for r in v]) for k, v in results.get("silent", {}).items()}

    def med(scen, kind, what):
        return thr.get(scen, {}).get(kind, {}).get(what, {}).get("median")

    ratios = {}
    for scen in thr:
        ratios[scen] = {
            "rps_nginx": _ratio(med(scen, "weir", "rps"), med(scen, "nginx", "rps")),
            "rps_floor": _ratio(med(scen, "weir", "rps"), med(scen, "floor", "rps")),
            "cpu_nginx": _ratio(med(scen, "weir", "cpu"), med(scen, "nginx", "cpu")),
            "cpu_floor": _ratio(med(scen, "weir", "cpu"), med(scen, "floor", "cpu")),
            "cpu_base": _ratio(med(scen, "weir", "cpu"), med(scen, "weir-base", "cpu")),
            "rps_base": _ratio(med(scen, "weir", "rps"), med(scen, "weir-base", "rps")),
        }

    def target(text, value, limit, at_most, unit="x"):
        if value is None:
            return {"text": text, "measured": "n/a", "ok": None}
        ok = value <= limit if at_most else value >= limit
        shown = f"{value:.0f} B" if unit == "B" else f"{value:.2f}x"
        return {"text": text, "measured": shown, "ok": ok}

    r = lambda scen, key: ratios.get(scen, {}).get(key)  # noqa: E731
    targets = [
        target("keep-alive CPU per request <= 1.1x floor", r("keep-alive", "cpu_floor"), 1.1, True),
        target("keep-alive CPU per request <= 0.75x nginx", r("keep-alive", "cpu_nginx"), 0.75, True),
        target("keep-alive throughput >= 1.25x nginx", r("keep-alive", "rps_nginx"), 1.25, False),
        target("pipelined throughput >= 0.9x floor", r("pipeline-16", "rps_floor"), 0.9, False),
        target("Connection: close throughput >= 1.0x nginx", r("close", "rps_nginx"), 1.0, False),
        target("silent connection memory <= 1 KB per connection", silent.get("weir", {}).get("median"),
               MEMORY_TARGET, True, "B"),
        target("idle memory <= 1 KB per connection", idle.get("weir", {}).get("median"), MEMORY_TARGET, True, "B"),
    ]
    targets += uring.targets({"throughput": thr, "idle": idle}, results, MEMORY_TARGET)
    if "weir-uring" in results["servers"]:
        ovf = uring.overflow_target(results)
        targets.append({"text": "weir-uring CQ overflows = 0 (weir-demo metrics, every run)",
                        "measured": "n/a" if ovf is None else str(ovf), "ok": None if ovf is None else ovf == 0})
    return {"throughput": thr, "idle": idle, "silent": silent, "ratios": ratios, "targets": targets,
            "baseline": baseline(results)}


def baseline(results):
    """weir over weir-base per scenario: the ratio of the median CPU per request
    (and requests/s), with the min-max of the per-round ratios (weir and
    weir-base run next to each other in every round, so a round's ratio shares
    its moment's noise)."""
    out = {}
    for scen, by_kind in results["runs"].items():
        w, b = by_kind.get("weir"), by_kind.get("weir-base")
        if not w or not b:
            continue
        rounds = [x["cpu_us_per_req"] / y["cpu_us_per_req"] for x, y in zip(w, b) if y["cpu_us_per_req"]]
        out[scen] = {
            "cpu": _ratio(statistics.median(r["cpu_us_per_req"] for r in w),
                          statistics.median(r["cpu_us_per_req"] for r in b)),
            "rps": _ratio(statistics.median(r["rps"] for r in w), statistics.median(r["rps"] for r in b)),
            "cpu_rounds": _summary(rounds) if rounds else None,
        }
    return out


def baseline_lines(results):
    """The log's lines for weir against weir-base (none without weir-base)."""
    lines = []
    for scen, r in baseline(results).items():
        rr = r["cpu_rounds"]
        spread = f" (rounds {rr['min']:.3f}–{rr['max']:.3f})" if rr else ""
        lines.append(f"  weir/weir-base {scen:12}: CPU per request {_x3(r['cpu'])}{spread}, "
                     f"requests/s {_x3(r['rps'])}")
    return lines


def _x3(v):
    return "–" if v is None else f"{v:.3f}"


def _mm(s, fmt):
    return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})"


def _x(v):
    return "–" if v is None else f"{v:.2f}"


def tables(summ, results):
    if not summ["throughput"]:  # a BENCH_PARTS run without throughput
        lines = ["(no throughput runs)"]
    else:
        lines = ["| scenario | server | requests/s, median (min–max) | server CPU µs/request, median (min–max) "
                 "| socket errors | non-2xx | others' CPU, % of a core, median (max) | noisy runs kept |",
                 "|---|---|---:|---:|---:|---:|---:|---:|"]
    for scen, by_kind in summ["throughput"].items():
        for kind in results["servers"]:
            if kind in by_kind:
                t = by_kind[kind]
                lines.append(f"| {scen} | {LABEL[kind]} | {_mm(t['rps'], '{:,.0f}')} | {_mm(t['cpu'], '{:.2f}')} "
                             f"| {t['socket_errors']} | {t['non2xx']} "
                             f"| {t['others']['median']:.0f} ({t['others']['max']:.0f}) | {t['noisy']} |")
    keys = ("rps_nginx", "rps_floor", "cpu_nginx", "cpu_floor")
    shown = {scen: r for scen, r in summ["ratios"].items() if any(r[k] is not None for k in keys)}
    if shown:  # not in a run of weir and weir-base alone
        lines += ["", "| scenario | weir/nginx req/s | weir/floor req/s | weir/nginx CPU/req | weir/floor CPU/req |",
                  "|---|---:|---:|---:|---:|"]
    for scen, r in shown.items():
        lines.append(f"| {scen} | " + " | ".join(_x(r[k]) for k in keys) + " |")
    if summ.get("baseline"):
        lines += ["", "| scenario | weir/weir-base CPU per request, ratio of medians (per-round min–max) "
                  "| weir/weir-base requests/s |", "|---|---:|---:|"]
        for scen, r in summ["baseline"].items():
            rr = r["cpu_rounds"]
            spread = f" ({rr['min']:.3f}–{rr['max']:.3f})" if rr else ""
            lines.append(f"| {scen} | {_x3(r['cpu'])}{spread} | {_x3(r['rps'])} |")
    lines += memory_table(summ, results)
    lines += uring.lines(summ, results, LABEL)
    if results.get("syscalls"):
        scens = _syscall_scenarios(results)
        lines += ["", "| syscalls per request | " + " | ".join(f"{sc} ({how})" for sc in scens
                                                              for how in ("perf", "strace")) + " |",
                  "|---|" + "---:|" * (2 * len(scens))]
        for kind in results["servers"]:
            e = results["syscalls"].get(kind)
            if e:
                cells = []
                for scen in scens:
                    for key in ("per_req", "strace_per_req"):
                        v = e.get(scen, {}).get(key)
                        cells.append("–" if v is None else f"{v:.3f}")
                lines.append(f"| {LABEL[kind]} | " + " | ".join(cells) + " |")
    lines += ["", "| target | measured | met |", "|---|---:|:---:|"]
    for t in summ["targets"]:
        ok = "n/a" if t["ok"] is None else ("yes" if t["ok"] else "**no**")
        lines.append(f"| {t['text']} | {t['measured']} | {ok} |")
    return "\n".join(lines)


def _syscall_scenarios(results):
    """The scenarios the syscall runs covered, in the order they ran."""
    return list(dict.fromkeys(sc for e in results.get("syscalls", {}).values() for sc in e))


def memory_table(summ, results):
    """Rows silent / idle keep-alive, a column per server and the target."""
    rows = [(m, t) for m, t in (("silent", "silent (connected, nothing sent)"),
                                ("idle", "idle keep-alive (served one GET)")) if summ.get(m)]
    if not rows:
        return []
    kinds = [k for k in results["servers"] if any(k in summ[m] for m, _ in rows)]
    lines = ["", f"| bytes per connection ({results['idle_conns']} each), median (min–max) | "
             + " | ".join(LABEL[k] for k in kinds) + " | target |", "|---|" + "---:|" * (len(kinds) + 1)]
    for m, text in rows:
        cells = [_mm(summ[m][k], "{:,.0f}") if k in summ[m] else "–" for k in kinds]
        lines.append(f"| {text} | " + " | ".join(cells) + f" | ≤ {MEMORY_TARGET:,} |")
    return lines


def silent_notes(results):
    """What the silent runs needed: the accept wait, and any shortfall."""
    waits, bad = [], []
    for kind in results["servers"]:
        runs = results.get("silent", {}).get(kind)
        if not runs:
            continue
        w = [r["accept_wait_s"] for r in runs]
        waits.append(f"{LABEL[kind]} {min(w):.1f}–{max(w):.1f} s")
        timed_out = sum(1 for r in runs if r["timed_out"])
        if timed_out:
            bad.append(f"**{LABEL[kind]}: the wait for accepts timed out in {timed_out} of {len(runs)} runs** "
                       f"(limit {results.get('accept_wait_limit_s', '?')} s); its silent figures count only what "
                       "it had accepted")
        held = min(r["held"] for r in runs)
        if held < runs[0]["n"]:
            bad.append(f"**{LABEL[kind]} held only {held} of {runs[0]['n']} silent connections** in its worst "
                       "run (bytes are per held connection)")
    if not waits:
        return []
    why = "weir's TCP_DEFER_ACCEPT holds a silent one in SYN-RECV until the SYN-ACK retransmit"
    cookies = [r["tcp_counters"].get("TCPReqQFullDoCookies", 0) for runs in results["silent"].values() for r in runs]
    if any(cookies):  # netns-wide counters: a hint, not a proof
        why += ("; the kernel counted SYN cookies in these runs (up to "
                f"{max(cookies)} per run): a connection that finds the SYN queue full gets one, and a cookie "
                "connection skips the deferral")
    return [f"Silent connections: the servers had accepted them all this long after the client's last connect: "
            f"{', '.join(waits)} ({why})."] + bad


def _notes(results, summ):
    """Observations that this run's own data supports, and only those."""
    notes = []
    thr = summ["throughput"]
    noisy = sum(t.get("noisy", 0) for by_kind in thr.values() for t in by_kind.values())
    others = max((t["others"]["median"] for by_kind in thr.values() for t in by_kind.values()), default=0)
    if noisy or others > 15:
        notes.append(f"Other work on the machine disturbed this run (up to {others:.0f}% of a core per figure, "
                     f"{noisy} noisy runs kept): the requests/s medians and the throughput targets are "
                     "unreliable here; the CPU-per-request figures and ratios hold.")
    sc = results.get("syscalls", {})
    ng = sc.get("nginx", {}).get("pipeline-16", {}).get("strace_by_call", {})
    if ng.get("writev", 0) >= 0.9:
        notes.append(f"Pipelined, nginx writes each answer with its own writev ({ng['writev']:.2f} per request "
                     "in the strace run above), which is why it gains little from pipelining; weir and the floor "
                     "answer a whole batch with one write.")
    w = sc.get("weir", {}).get("keep-alive", {}).get("per_req")
    f = sc.get("floor", {}).get("keep-alive", {}).get("per_req")
    cpu = summ["ratios"].get("keep-alive", {}).get("cpu_floor")
    if w and f and cpu and abs(w / f - 1) < 0.05 and cpu > 1.05:
        notes.append(f"Keep-alive, weir-demo makes the same syscalls per request as the floor ({w:.2f} vs "
                     f"{f:.2f}) yet spends {cpu:.2f}x its CPU: the difference is user-space work in the "
                     "engine (parsing, the connection state machine, buffer pooling, composing the answer).")
    return notes


def markdown(results, summ, svg_name):
    m = results["machine"]
    cmds = results.get("commands", {})
    out = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`scripts/run-bench`); every figure below was measured in the run",
        f"this page records. {'**This is a quick smoke run (BENCH_QUICK=1): too short to quote.**' if results['quick'] else ''}",
        "",
        "## Run",
        "",
        f"- date: {results['date']}",
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['mem_gib']} GiB, Linux {m['kernel']}",
        f"- versions: {m['weir']}; {m['nginx']}; {m['wrk']}",
        f"- machine busy before the run (others' work, sampled 2 s from /proc/stat): "
        f"{results.get('busy_at_start', 0):.0%}; load average at start {results['load_at_start']}, "
        f"at end {results.get('load_at_end', '?')}",
        f"- each figure: median of {results['runs_per_figure']} runs of {results['duration_s']} s, min–max in "
        "brackets; servers alternated A/B/C, C/B/A, ... within each scenario",
        "- loopback, two cores, nothing pinned: the server and wrk share both cores, so throughput",
        "  depends on how the scheduler splits them; **server CPU per request** (user+system time of the",
        "  server process from /proc/PID/stat before and after a run, over the requests wrk counted) is",
        "  the stable figure",
        "- others' CPU: what the machine spent in user+system time during a run beyond the server and",
        "  wrk (other people's builds and tests on this shared machine); a run where it passed 15% of a",
        "  core was retried (up to 3 times, after waiting for quiet) and is counted as noisy if kept",
        "",
        "Servers:",
        "",
    ]
    for kind in results["servers"]:
        if kind in cmds:
            out.append(f"- {LABEL[kind]}: `{cmds[kind]}`")
    if "weir-base" in results["servers"]:
        out += [f"- weir-demo is `{m.get('weir_commit', '?')}`; weir-base is {m.get('weir_base', '?')} built from "
                f"`{m.get('weir_base_commit', '?')}`, each with its own libweir (from /proc/PID/maps: "
                + ", ".join(f"{LABEL[k]} `{v}`" for k, v in results.get("libweir", {}).items()) + ")"]
    out += [
        "  (nginx: generated config build/bench/nginx.conf — 1 worker, master_process off, access_log off,",
        "  `return 200 \"Hello, World!\"`, keepalive_requests 100000000; floor: bench/floor/main.c, a",
        "  level-triggered epoll loop that answers each `\\r\\n\\r\\n` with a canned response, no parsing;",
        "  uring-floor: bench/uring-floor/main.c, the same answers from one io_uring (multishot accept,",
        "  multishot recv into a provided-buffer ring, sends, one submit-and-wait per pass, DEFER_TASKRUN))",
        "",
        "Load:",
        "",
        f"- keep-alive: `wrk -t1 -c{results['conns']} -d{results['duration_s']}s URL`, and the same with "
        "`-c1000` (keep-alive-1000)",
        f"- close: `wrk -t1 -c{results['conns']} -d{results['duration_s']}s -H 'Connection: close' URL`",
        f"- pipelining: `wrk -t1 -c{results['conns']} -d{results['duration_s']}s -s bench/wrk/pipeline.lua URL "
        f"-- {results['pipeline']}`",
        f"- memory: RSS growth (VmRSS) of a fresh, warmed-up server (one request served) while "
        f"`build/bench/idle` holds {results['idle_conns']}",
        "  connections, per connection the server holds (its socket count in /proc/PID/fd): *silent* ones",
        "  connect and never send a byte (`idle HOST PORT N silent`), *idle keep-alive* ones each served one",
        "  GET first (bench/idle/main.c). Silent ones reach the server only when accept(2) returns them, and",
        "  weir's TCP_DEFER_ACCEPT holds them in SYN-RECV until the SYN-ACK retransmit, so the run waits (at",
        f"  most {results.get('accept_wait_limit_s', 15):.0f} s) until `ss` shows the listener's accept queue "
        "and its SYN-RECV entries empty",
        "  before reading RSS (bench/memory.py). weir-demo runs with `--header-timeout-ms 120000` for",
        "  them and nginx has `client_header_timeout 120s`, so no first-byte timeout closes them meanwhile",
        "- syscalls: `perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter -p PID` over a",
        "  short keep-alive run (64 and 1,000 connections) and a pipelined one, and `strace -c -f -p PID` over",
        "  three more (strace slows the server; its per-request counts are what matter)",
        "- weir-uring: weir-demo `--backend uring`; its own counters (uring_enters, uring_cq_overflows,",
        "  uring_nobufs, uring_rearms, uring_tier) are read on SIGHUP before and after each run, per request",
        "  of the demo's own request count (bench/uring.py)",
        "",
        "## Results",
        "",
        tables(summ, results),
        "",
        f"![throughput, CPU per request and idle memory]({svg_name})",
        "",
    ]
    by_call = results.get("syscalls", {})
    if by_call:
        scens = _syscall_scenarios(results)
        out += ["Syscalls per request by call (strace -c -f; the calls that make up nine tenths and more):", "",
                "| server | " + " | ".join(scens) + " |", "|---|" + "---|" * len(scens)]
        for kind in results["servers"]:
            cells = []
            for scen in scens:
                calls = by_call.get(kind, {}).get(scen, {}).get("strace_by_call", {})
                total, shown, acc = sum(calls.values()), [], 0.0
                for name, v in calls.items():
                    if acc >= 0.9 * total or len(shown) == 5:
                        break
                    shown.append(f"{name} {v:.3f}")
                    acc += v
                cells.append(", ".join(shown) or "–")
            out.append(f"| {LABEL[kind]} | " + " | ".join(cells) + " |")
        out.append("")
    notes = _notes(results, summ) + silent_notes(results)
    if notes:
        out += ["## Reading these figures", ""] + [f"- {n}" for n in notes] + [""]
    if results.get("parser"):
        out += ["## Parser (scripts/bench-parser)", "", "```", results["parser"]["output"], "```", ""]
    out += [
        "## Reproduce",
        "",
        "```",
        "make bench                 # full run: rewrites this page (keeping sections other scripts own,",
        "                           # e.g. scripts/bench-go's) and docs/benchmarks.svg",
        "BENCH_QUICK=1 make bench   # smoke run: build/bench/benchmarks-quick.md only",
        "BENCH_SWITCH=0 make bench  # without the adaptive switch (its section below stays as it is)",
        "BENCH_PARTS=switch scripts/run-bench   # the adaptive switch alone: build/bench/benchmarks-partial.md",
        "scripts/bench-baseline COMMIT   # weir against weir built from COMMIT (CPU per request ratio):",
        "                                # build/bench/benchmarks-baseline.md only",
        "```",
        "",
        "Raw per-run figures: build/bench/results.json. Do not run it while other builds load the machine;",
        "the load average at start and end is recorded above.",
        "",
    ]
    return "\n".join(out)


def switch_section(sw):
    """The page's "Adaptive switch" section (bench/switch_report.py), from
    results["switch"]."""
    return switch_report.section(sw)
