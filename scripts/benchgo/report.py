"""The Go section of docs/benchmarks.md: summaries, ratios, the targets of
issues 5 and 13, and sentences read off the figures."""
import json
import os
import statistics

from .common import BEGIN, DOC, END, OUT, ROOT, log
from .report_text import markdown

# (a, b): a's figures over b's; only pairs whose both servers ran are kept.
PAIRS = [
    ("weir-native", "nethttp"), ("weir-native-uring", "nethttp"),
    ("weir-nethttp", "nethttp"), ("weir-nethttp-uring", "nethttp"),
    ("weir-inline", "nethttp"), ("weir-inline-uring", "nethttp"),
    ("fasthttp", "nethttp"), ("celeris-epoll", "nethttp"), ("celeris-iouring", "nethttp"),
    ("weir-native", "fasthttp"), ("weir-native-uring", "fasthttp"),
    ("weir-native", "celeris-epoll"), ("weir-native-uring", "celeris-iouring"),
    ("weir-native-uring-1p", "weir-native-uring"), ("weir-inline-uring", "weir-nethttp-uring"),
    ("weir-native", "weir-demo"), ("weir-native-uring", "weir-demo-uring"),
    ("weir-demo", "floor"), ("weir-demo-uring", "uring-floor"), ("celeris-iouring", "uring-floor"),
    ("weir-native-uring", "uring-floor"),
    ("weir-native-w2", "weir-native"), ("weir-native-uring-w2", "weir-native-uring"),
    ("weir-native-w2", "fasthttp"), ("weir-native-uring-w2", "celeris-iouring"),
    ("weir-native-uring-sp", "weir-native-uring"), ("weir-native-uring-sp", "celeris-iouring"),
    ("weir-native-uring-w2-sp", "weir-native-uring-w2"), ("weir-native-uring-w2-sp", "celeris-iouring"),
]

# (text, scenario, pair, what, limit): what "rps" wants a's throughput at
# least limit times b's; "cpu" wants a's CPU per request at most limit times b's.
TARGETS = [
    ("issue 13: native API on io_uring, CPU per request <= 0.8x celeris on io_uring, keep-alive",
     "keep-alive", "weir-native-uring/celeris-iouring", "cpu", 0.8),
    ("issue 13: native API >= 2.0x net/http, keep-alive, epoll", "keep-alive", "weir-native/nethttp", "rps", 2.0),
    ("issue 13: native API >= 2.0x net/http, keep-alive, io_uring", "keep-alive",
     "weir-native-uring/nethttp", "rps", 2.0),
    ("issue 13: net/http adapter (async, the default) >= 1.5x net/http, keep-alive, epoll", "keep-alive",
     "weir-nethttp/nethttp", "rps", 1.5),
    ("issue 13: net/http adapter (async, the default) >= 1.5x net/http, keep-alive, io_uring", "keep-alive",
     "weir-nethttp-uring/nethttp", "rps", 1.5),
    ("issue 13: native API pipelined >= 1.0x fasthttp, epoll", "pipeline-16", "weir-native/fasthttp", "rps", 1.0),
    ("issue 13: native API pipelined >= 1.0x fasthttp, io_uring", "pipeline-16",
     "weir-native-uring/fasthttp", "rps", 1.0),
    ("issue 5: native API >= 1.2x fasthttp, keep-alive, epoll", "keep-alive", "weir-native/fasthttp", "rps", 1.2),
]


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def _throughput(by_kind):
    return {k: {"rps": summary([r["rps"] for r in v]),
                "cpu": summary([r["cpu_us_per_req"] for r in v]),
                "errors": sum(r["socket_errors"] + r["non2xx"] for r in v),
                "noisy": sum(1 for r in v if r.get("noisy", r["others_share"] > 0.15)),
                "retried": sum(r.get("attempts", 1) - 1 for r in v),
                "wrk": summary([r.get("wrk_share", 0.0) * 100 for r in v]),
                "others": summary([r["others_share"] * 100 for r in v])}
            for k, v in by_kind.items()}


def _ratio(thr, by_kind, a, b):
    # paired by round: neighbours in time share the machine's mood
    pa = {r["round"]: r for r in by_kind[a]}
    paired = [pa[r["round"]]["rps"] / r["rps"] for r in by_kind[b] if r["round"] in pa]
    return {
        "rps": thr[a]["rps"]["median"] / thr[b]["rps"]["median"],
        "rps_paired": summary(paired),
        # CPU per request, inverted: how many of b's requests a's CPU buys
        "cpu": thr[b]["cpu"]["median"] / thr[a]["cpu"]["median"],
    }


def summarize(results):
    thr, ratios = {}, {}
    for scen, by_kind in results["runs"].items():
        thr[scen] = _throughput(by_kind)
        ratios[scen] = {f"{a}/{b}": _ratio(thr[scen], by_kind, a, b)
                        for a, b in PAIRS if a in by_kind and b in by_kind}
    targets = []
    for text, scen, pair, what, limit in TARGETS:
        r = ratios.get(scen, {}).get(pair)
        t = {"text": text, "what": what, "limit": limit, "measured": None, "paired": None, "cpu": None,
             "ok": None}
        if r is not None:
            if what == "rps":
                t.update(measured=r["rps"], paired=r["rps_paired"], cpu=r["cpu"], ok=r["rps"] >= limit)
            else:  # a's CPU over b's: the inverse of the inverted ratio
                t.update(measured=1 / r["cpu"], paired=None, cpu=r["cpu"], ok=1 / r["cpu"] <= limit)
        targets.append(t)
    return {"throughput": thr, "ratios": ratios, "targets": targets}


def write_section(text):
    """Replace the section between its markers, or append it; the rest of
    docs/benchmarks.md belongs to scripts/run-bench."""
    old = open(DOC).read() if os.path.exists(DOC) else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        new = head + text + ("\n" + tail if tail else "")
    elif old:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        new = "# Benchmarks\n\n" + text
    with open(DOC, "w") as f:
        f.write(new)


def publish(results):
    """The section, to docs/ after a full run, beside the results after a
    quick one (a smoke run never replaces the full run's figures)."""
    summ = summarize(results)
    text = markdown(results, summ)
    if results["quick"]:
        path = os.path.join(OUT, "benchmarks-go-quick.md")
        with open(path, "w") as f:
            f.write(text)
    else:
        path = DOC
        write_section(text)
    return summ, path


def report_only(path):
    """Rewrite the section from a results.json already measured (no new runs)."""
    with open(path) as f:
        results = json.load(f)
    _, out = publish(results)
    log(f"written: {os.path.relpath(out, ROOT)} from {path}")
