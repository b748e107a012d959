"""Syscalls per request for scripts/run-bench: perf stat (every syscall, and
io_uring_enter alone) and strace -c -f over short wrk runs against each
server, with a weir-uring's own counters over the perf run (bench/uring.py)."""
import os
import re
import shutil
import signal
import subprocess
import time

import uring
from report import LABEL


def count(servers, results, scenarios, wrk, out_dir, dur, log):
    """Syscalls per request, keep-alive (64 and 1,000 connections) and
    pipelined: perf counts them cheaply (and io_uring_enter alone);
    strace -c names them (and slows the server, so its request count is its own).
    scenarios: (name, wrk arguments, connections); wrk(url, extra, seconds,
    connections) runs one load; dur: seconds per run."""
    perf = shutil.which("perf")
    events = uring.perf_events()
    for s in servers:
        for scen, extra, conns in scenarios:
            entry = {}
            if perf:
                out = os.path.join(out_dir, f"perf-{s.kind}-{scen}.txt")
                p = subprocess.Popen([perf, "stat", "-x,", "-e", events, "-p", str(s.pid),
                                      "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
                snap0 = s.snapshot()
                r = wrk(s.url(), extra, dur, conns)
                if snap0 is not None:
                    entry["uring"] = uring.delta(snap0, s.snapshot())
                p.send_signal(signal.SIGINT)
                p.wait(timeout=10)
                with open(out) as f:
                    counts = uring.perf_counts(f.read())
                n = max(r["requests"], 1)
                if "raw_syscalls:sys_enter" in counts:
                    entry["perf_syscalls"] = counts["raw_syscalls:sys_enter"]
                    entry["perf_requests"] = r["requests"]
                    entry["per_req"] = counts["raw_syscalls:sys_enter"] / n
                if uring.PERF_ENTER in counts:
                    entry["enter_per_req"] = counts[uring.PERF_ENTER] / n
            if shutil.which("strace"):
                out = os.path.join(out_dir, f"strace-{s.kind}-{scen}.txt")
                p = subprocess.Popen(["strace", "-c", "-f", "-p", str(s.pid), "-o", out],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
                r = wrk(s.url(), extra, dur, conns)
                p.send_signal(signal.SIGINT)
                p.wait(timeout=20)
                calls, total = {}, 0
                with open(out) as f:
                    for line in f:
                        t = line.split()
                        if len(t) >= 5 and re.match(r"^[\d.]+$", t[0]) and t[3].isdigit():
                            if t[-1] == "total":
                                total = int(t[3])
                            else:
                                calls[t[-1]] = int(t[3])
                if total:
                    n = max(r["requests"], 1)
                    entry["strace_requests"] = r["requests"]
                    entry["strace_per_req"] = total / n
                    entry["strace_by_call"] = {k: v / n for k, v in sorted(calls.items(), key=lambda kv: -kv[1])}
            results["syscalls"].setdefault(s.kind, {})[scen] = entry
            if entry:
                enter = entry.get("strace_by_call", {}).get("io_uring_enter")
                log(f"  syscalls     {LABEL[s.kind]:10} {scen:15}: perf {entry.get('per_req', float('nan')):.3f}/req, "
                    f"strace {entry.get('strace_per_req', float('nan')):.3f}/req"
                    + (f", io_uring_enter perf {entry.get('enter_per_req', float('nan')):.3f}/req "
                       f"strace {enter if enter is not None else float('nan'):.3f}/req"
                       if s.kind in uring.KINDS else "") + uring.note(entry))
