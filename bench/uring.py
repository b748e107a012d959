"""The io_uring side of scripts/run-bench: weir-demo's own counters (read on
SIGHUP), io_uring_enter counts, and the ratios that put weir on io_uring next
to weir on epoll and to the two floors (bench/floor, bench/uring-floor).

weir-demo prints its metrics on SIGHUP as "name value" lines between
"metrics begin" and "metrics end" on stdout. The uring_* fields came with the
io_uring backend's demo; a weir-demo without them reads as "n/a", never as 0,
so an old build cannot pass the cq-overflow check by saying nothing.
"""
import os
import queue
import signal
import statistics
import threading

KINDS = ("weir-uring", "uring-floor")  # the servers that run on io_uring
METRIC_KINDS = ("weir-uring",)  # weir-demos whose counters are read around each run
COUNTERS = ("requests", "uring_enters", "uring_cq_overflows", "uring_nobufs", "uring_rearms")
PERF_ENTER = "syscalls:sys_enter_io_uring_enter"
TIERS = {1: "defer", 2: "coop", 3: "basic"}  # WEIR_URING_TIER_*, should the demo print the number


class Metrics:
    """Reads a weir-demo's stdout from a thread (the pipe never fills, and no
    read blocks the run), and hands out one SIGHUP's metrics at a time."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def snapshot(self, timeout=5.0):
        """{name: value} of one SIGHUP (values int where they parse), or None
        when the demo does not answer in time."""
        while not self.lines.empty():  # anything printed since: not this answer
            self.lines.get_nowait()
        try:
            self.proc.send_signal(signal.SIGHUP)
            while self.lines.get(timeout=timeout) != "metrics begin":
                pass
            out = {}
            while (line := self.lines.get(timeout=timeout)) != "metrics end":
                name, _, value = line.partition(" ")
                out[name] = int(value) if value.isdigit() else value
            return out
        except (queue.Empty, ProcessLookupError):
            return None


def delta(before, after):
    """What one run cost in weir-demo's counters: each COUNTER's growth (None
    where the demo lacks it), the tier as printed, and enters per request."""
    if not before or not after:
        return None
    d = {k: (after[k] - before[k] if isinstance(after.get(k), int) and isinstance(before.get(k), int) else None)
         for k in COUNTERS}
    d["uring_tier"] = TIERS.get(after.get("uring_tier"), after.get("uring_tier"))
    reqs = d["requests"]
    d["enters_per_req"] = d["uring_enters"] / reqs if d["uring_enters"] is not None and reqs else None
    return d


def note(r):
    """weir-uring's counters for the log line ("" for other servers)."""
    u = r.get("uring")
    if not u:
        return ""
    epr = "n/a" if u["enters_per_req"] is None else f"{u['enters_per_req']:.3f}"
    ovf = "n/a" if u["uring_cq_overflows"] is None else u["uring_cq_overflows"]
    return f"  enters/req {epr} cq-overflows {ovf}"


def perf_events():
    """perf's -e list: every syscall, and io_uring_enter alone where the
    kernel has that tracepoint."""
    have = any(os.path.isdir(os.path.join(d, "events/syscalls/sys_enter_io_uring_enter"))
               for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))
    return "raw_syscalls:sys_enter" + ("," + PERF_ENTER if have else "")


def perf_counts(text):
    """{event: count} from `perf stat -x,` output."""
    counts = {}
    for line in text.splitlines():
        t = line.split(",")
        if len(t) >= 3 and t[0].isdigit():
            counts[t[2]] = int(t[0])
    return counts


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _sum(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) if xs else None


def _cell(v, fmt="{:.3f}"):
    return "n/a" if v is None else fmt.format(v)


def _cpu(summ, scen, kind):
    return summ["throughput"].get(scen, {}).get(kind, {}).get("cpu", {}).get("median")


RATIOS = (  # (label, numerator kind, denominator kind)
    ("weir-uring/floor", "weir-uring", "floor"),
    ("weir-uring/weir", "weir-uring", "weir"),
    ("weir-uring/uring-floor", "weir-uring", "uring-floor"),
    ("uring-floor/floor", "uring-floor", "floor"),
)


def ratio_table(summ, results):
    """CPU per request of the io_uring servers over their epoll counterparts,
    per scenario (ratios of medians)."""
    kinds = set(results["servers"])
    cols = [r for r in RATIOS if r[1] in kinds and r[2] in kinds]
    if not cols or not summ["throughput"]:
        return []
    lines = ["", "| CPU per request, ratio of medians | " + " | ".join(c[0] for c in cols) + " |",
             "|---|" + "---:|" * len(cols)]
    for scen in summ["throughput"]:
        cells = []
        for _, a, b in cols:
            x, y = _cpu(summ, scen, a), _cpu(summ, scen, b)
            cells.append(_cell(x / y if x is not None and y else None))
        lines.append(f"| {scen} | " + " | ".join(cells) + " |")
    return lines


def enter_table(results, label):
    """io_uring_enter per request (perf, strace) for the io_uring servers,
    and weir-demo's own count and CQ health from its metrics."""
    kinds = [k for k in results["servers"] if k in KINDS]
    if not kinds:
        return []
    lines = ["", "| io_uring server | scenario | io_uring_enter/req (perf) | io_uring_enter/req (strace) "
             "| uring_enters/req (weir metrics) | cq overflows | nobufs | rearms | tier |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    scens = list(results["runs"]) or list(next(iter(results["syscalls"].values()), {}))
    for kind in kinds:
        sc = results["syscalls"].get(kind, {})
        for scen in dict.fromkeys(scens + list(sc)):
            e = sc.get(scen, {})
            strace = e.get("strace_by_call", {}).get("io_uring_enter") if e.get("strace_by_call") else None
            ms = [r.get("uring") for r in results["runs"].get(scen, {}).get(kind, [])] + [e.get("uring")]
            ms = [m for m in ms if m]
            metrics = kind in METRIC_KINDS
            if not ms and "enter_per_req" not in e and strace is None:
                continue  # a scenario the syscall runs skip, on a server without counters
            tier = next((m["uring_tier"] for m in ms if m.get("uring_tier") is not None), None)
            lines.append(
                f"| {label[kind]} | {scen} | {_cell(e.get('enter_per_req'))} | {_cell(strace)} "
                f"| {_cell(_med(m['enters_per_req'] for m in ms)) if metrics else '–'} "
                f"| {_cell(_sum(m['uring_cq_overflows'] for m in ms), '{:d}') if metrics else '–'} "
                f"| {_cell(_sum(m['uring_nobufs'] for m in ms), '{:d}') if metrics else '–'} "
                f"| {_cell(_sum(m['uring_rearms'] for m in ms), '{:d}') if metrics else '–'} "
                f"| {(tier if tier is not None else 'n/a') if metrics else '–'} |")
    return lines


def overflow_target(results):
    """weir-uring's CQ overflows over every measured run: must be 0."""
    ms = [r.get("uring") for runs in results["runs"].values() for r in runs.get("weir-uring", [])]
    ms += [e.get("uring") for e in results["syscalls"].get("weir-uring", {}).values()]
    ms = [m for m in ms if m]
    if not ms:
        return None
    return _sum(m["uring_cq_overflows"] for m in ms)


def targets(summ, results, memory_target):
    """Issue 10's targets for weir on io_uring, as rows of the target table."""
    if "weir-uring" not in results["servers"]:
        return []

    def row(text, value, limit, at_most, shown=None):
        if value is None:
            return {"text": text, "measured": "n/a", "ok": None}
        ok = value <= limit if at_most else value >= limit
        return {"text": text, "measured": shown or f"{value:.2f}x", "ok": ok}

    def ratio(scen, a, b):
        x, y = _cpu(summ, scen, a), _cpu(summ, scen, b)
        return x / y if x is not None and y else None

    out = [row("io_uring keep-alive CPU per request <= 0.8x the epoll floor",
               ratio("keep-alive", "weir-uring", "floor"), 0.8, True)]
    for scen in summ["throughput"]:
        out.append(row(f"io_uring CPU per request <= weir epoll's, {scen}", ratio(scen, "weir-uring", "weir"),
                       1.0, True))
    enter = results["syscalls"].get("weir-uring", {}).get("keep-alive", {}).get("enter_per_req")
    out.append(row("<= 0.1 io_uring_enter per request, keep-alive at 64 (perf)", enter, 0.1, True,
                   None if enter is None else f"{enter:.3f}"))
    idle = summ["idle"].get("weir-uring", {}).get("median")
    out.append(row("io_uring idle connection <= 1 KB", idle, memory_target, True,
                   None if idle is None else f"{idle:.0f} B"))
    return out


def lines(summ, results, label):
    return ratio_table(summ, results) + enter_table(results, label)
