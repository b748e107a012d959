"""The words and tables of the Go section, read off a summary."""
import statistics

from .common import BEGIN, CONNS, END, PIPELINE, SCEN_TEXT
from .servers import LABEL


def mm(s, fmt):
    return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})"


def pair_text(pair):
    a, b = pair.split("/")
    return f"{LABEL[a]} ÷ {LABEL[b]}"


def tables(summ, results):
    out = ["| scenario | server | requests/s, median (min–max) | server CPU µs/request, median (min–max) "
           "| errors | wrk's CPU, % of a core | others' CPU, % of a core, median (max) | noisy runs kept |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for scen, by_kind in summ["throughput"].items():
        for kind in results["servers"]:
            t = by_kind.get(kind)
            if t:
                out.append(f"| {SCEN_TEXT[scen]} | {LABEL[kind]} | {mm(t['rps'], '{:,.0f}')} | "
                           f"{mm(t['cpu'], '{:.2f}')} | {t['errors']} | {t['wrk']['median']:.0f} | "
                           f"{t['others']['median']:.0f} ({t['others']['max']:.0f}) | {t['noisy']} |")
    out += ["", "| scenario | ratio | throughput, ratio of medians (per-round min–max) "
            "| CPU per request, inverted ratio of medians |", "|---|---|---:|---:|"]
    for scen, by_pair in summ["ratios"].items():
        for pair, r in by_pair.items():
            p = r["rps_paired"]
            out.append(f"| {SCEN_TEXT[scen]} | {pair_text(pair)} | {r['rps']:.2f}× "
                       f"({p['min']:.2f}–{p['max']:.2f}) | {r['cpu']:.2f}× |")
    if results["crossings"]:
        out += ["", "| scenario | server | requests | polls | wakes | direct responds | cgo calls per request |",
                "|---|---|---:|---:|---:|---:|---:|"]
        for scen, by_kind in results["crossings"].items():
            for kind, e in by_kind.items():
                out.append(f"| {SCEN_TEXT[scen]} | {LABEL[kind]} | {e['exchanges']:,} | {e['polls']:,} | "
                           f"{e.get('wakes', 0):,} | {e['direct']:,} | {e['per_req']:.3f} |")
    return "\n".join(out)


def target_lines(summ):
    out = ["| target | measured: ratio of medians (per-round min–max) | met? "
           "| CPU per request, inverted ratio |", "|---|---:|---|---:|"]
    for t in summ["targets"]:
        if t["measured"] is None:
            out.append(f"| {t['text']} | n/a | not measured | – |")
            continue
        p = t["paired"]
        spread = f" ({p['min']:.2f}–{p['max']:.2f})" if p else " (CPU)"
        out.append(f"| {t['text']} | {t['measured']:.2f}×{spread} "
                   f"| {'yes' if t['ok'] else '**no**'} | {t['cpu']:.2f}× |")
    return "\n".join(out)


def _intro(results):
    m = results["machine"]
    q = " (quick smoke run: not a result)" if results["quick"] else ""
    lines = [
        BEGIN,
        "## Go servers",
        "",
        f"Measured {results['date']} by `scripts/bench-go`{q}: {results['runs_per_figure']} runs of "
        f"{results['duration_s']} s per figure, `wrk -t1 -c{CONNS}` (pipelined: {PIPELINE} requests a "
        "write), servers run in turn (A/B/C/D then D/C/B/A), unpinned: server and wrk share the machine's "
        "cores.",
        "",
        f"Machine: {m['cores']} CPUs ({m['cpu']}), {m['mem_gib']} GiB, Linux {m['kernel']}; "
        f"{m['go']}; {m['wrk']}. Load average at start {results['load_at_start']} "
        f"({results['busy_at_start']:.0%} of the CPUs busy in the 2 s before), at end "
        f"{results['load_at_end']}. The column \"others' CPU\" shows how much CPU work outside the "
        "benchmark took during each run.",
        "",
        "Servers, each answering `GET /` with `Hello, World!` and the header fields "
        f"{', '.join('`' + h + '`' for h in results['fields'])} (checked before the run). "
        "Every Go server runs with Go's default `GOMAXPROCS` (every CPU), as a user would run it; each "
        "weir server has one worker, celeris the two it needs at least (its io_uring engine caps itself "
        "to what RLIMIT_MEMLOCK allows: its log line is quoted below). One weir row runs with "
        "`GOMAXPROCS=1` to show what a worker without a spare P costs. weir-demo is weir's C demo "
        "(one inline worker, no Go): the engine's own cost; the floors are bare C loops with a canned "
        "answer (`bench/floor`, `bench/uring-floor`, as in the rest of this file): what the kernel's "
        "loopback TCP costs a request, which no server here can go below:",
        "",
    ]
    notes = results.get("server_notes", {})
    for kind in results["servers"]:
        g = results["gomaxprocs"][kind]
        lines.append(f"- **{LABEL[kind]}**: `{'GOMAXPROCS=' + str(g) + ' ' if g else ''}{results['commands'][kind]}`")
        for note in notes.get(kind, []):
            quoted = note.replace("`", "'")
            lines.append(f"  - it logged: \"{quoted}\"")
    src = results.get("celeris_src")
    lines += [
        "",
        "Sources: `examples/go/hello` (the weir servers, built against libweir installed with "
        "`make install PREFIX=build/bench/go/weir` and found through pkg-config), `bench/go/nethttp`, "
        "`bench/go/fasthttp` (module `bench/go`), `bench/go-celeris` (module of its own, built through a "
        "scratch go.mod whose `replace` points at the celeris v1.5.8 source snapshot"
        + (f", here `{src}`" if src else "") + "; the module proxy here refuses celeris). "
        "The server's CPU time per request is user+system of the server process (all threads) from "
        "`/proc/PID/stat` before and after a run, over the requests wrk counted: with wrk on the same two "
        "cores, throughput mostly says how the cores were shared, CPU per request is the stable figure.",
        "",
    ]
    return lines


def _noise(summ, results):
    thr = summ["throughput"]
    worst = max((t["others"]["max"] for s in thr.values() for t in s.values()), default=0)
    noisy = sum(t["noisy"] for s in thr.values() for t in s.values())
    retried = sum(t["retried"] for s in thr.values() for t in s.values())
    kept = sum(t["rps"]["n"] for s in thr.values() for t in s.values())
    rp = results.get("retry", {"max_others": 0.15, "retries": 0})
    lines = [f"A run during which work outside the benchmark took more than {rp['max_others']:.0%} of a core "
             f"was retried after a wait of up to 60 s for quiet, at most {rp['retries']} times: {retried} "
             f"retries; {noisy} of the {kept} runs kept are still noisy.", ""]
    if noisy:
        per = []
        for scen, by_kind in thr.items():
            n = sum(t["noisy"] for t in by_kind.values())
            k = sum(t["rps"]["n"] for t in by_kind.values())
            med = statistics.median(t["others"]["median"] for t in by_kind.values())
            per.append(f"{SCEN_TEXT[scen]}: {n} of {k} runs noisy, others took a median of {med:.0f}% of a core")
        lines += [f"**The machine was not always quiet** ({'; '.join(per)}; at most {worst:.0f}%). "
                  "Throughput figures of noisy runs are lower and less steady than on a quiet machine; "
                  "CPU per request is much less affected.", ""]
    return lines


def markdown(results, summ):
    lines = _intro(results) + _noise(summ, results) + [
        tables(summ, results),
        "",
        "Ratios: throughput is the ratio of the medians, with the smallest and largest ratio of two runs "
        "made one after the other in the same round; \"CPU per request, inverted\" is the second server's "
        "median CPU per request over the first's (above 1: the first needs less CPU per request).",
        "",
        "### Targets",
        "",
        target_lines(summ),
        "",
        "cgo calls per request are the binding's own counters (`Metrics.CgoCalls()`: polls, wakes and "
        "direct responds, over exchanges) of a fresh weir server that served one wrk run of the scenario "
        "(`--stats`).",
        "",
        "### What the figures mean",
        "",
    ] + meaning(summ, results) + [
        "",
        "Re-run (needs `make all`, wrk, Go; fasthttp comes from the Go module proxy, celeris from the "
        "shared snapshot):",
        "",
        "```sh",
        "scripts/bench-go                 # full run: rewrites this section of docs/benchmarks.md",
        "BENCH_QUICK=1 scripts/bench-go   # smoke run: build/bench/go/benchmarks-go-quick.md",
        "scripts/bench-go --report        # this section again from build/bench/go/results.json",
        "```",
        "",
        "Raw runs, wrk command lines, the run's log and server logs: `build/bench/go/` (`results.json`, "
        "`bench-go.log`). `scripts/run-bench` calls `scripts/bench-go` after writing the rest of this file.",
        END,
    ]
    return "\n".join(lines) + "\n"


def meaning(summ, results):
    """Sentences read off the figures, so they stay true when the run changes."""
    out = []
    r, thr = summ["ratios"], summ["throughput"]
    for scen in ("keep-alive", "pipeline-16"):
        for native, backend in (("weir-native", "epoll"), ("weir-native-uring", "io_uring")):
            n, f = r.get(scen, {}).get(f"{native}/nethttp"), r.get(scen, {}).get(f"{native}/fasthttp")
            if n and f:
                out.append(f"- {SCEN_TEXT[scen]}, {backend}: the native API served {n['rps']:.2f}× net/http's "
                           f"and {f['rps']:.2f}× fasthttp's requests per second; net/http needed "
                           f"{n['cpu']:.2f}× its CPU per request, fasthttp {f['cpu']:.2f}×.")
    met = [t["text"] for t in summ["targets"] if t["ok"]]
    if met:
        out.append(f"- Met: {'; '.join(met)}.")
    for t in summ["targets"]:
        if t["ok"] is False:
            if t["what"] == "rps":
                out.append(f"- **Not met**: {t['text']} ({t['measured']:.2f}×; in CPU per request "
                           f"{t['cpu']:.2f}×, {'which would meet it' if t['cpu'] >= t['limit'] else 'short of it too'}).")
            else:
                out.append(f"- **Not met**: {t['text']} ({t['measured']:.2f}×).")
    for scen, by_kind in thr.items():
        busiest = max(by_kind.values(), key=lambda t: t["wrk"]["median"])["wrk"]["median"]
        if busiest >= 85:
            out.append(f"- {SCEN_TEXT[scen]}: wrk itself used up to {busiest:.0f}% of a core (median of a "
                       "server's runs): the one-thread client is near its own limit, so these throughput "
                       "ratios understate the servers' differences; CPU per request shows them.")
    cross = [e["per_req"] for s in results["crossings"].values() for e in s.values()]
    if cross:
        lo, hi = min(cross), max(cross)
        out.append(f"- cgo calls per request under load (64 connections), both scenarios: {lo:.3f}–{hi:.3f}. Inline handlers "
                   "(the native API, `--inline`) answer within the batch's one `weirgo_cycle` crossing; async "
                   "handlers' answers ride the worker's next cycle through the mailbox, at the price of a "
                   "`weir_worker_wake` per burst.")
    errs = sum(t["errors"] for s in thr.values() for t in s.values())
    out.append(f"- Socket errors and non-2xx answers over all runs: {errs}.")
    out.append("- These are hello-world figures on loopback with the client on the same two cores: they "
               "compare the servers' per-request overhead (parsing, the cgo crossing, writing), not "
               "application performance.")
    return out
