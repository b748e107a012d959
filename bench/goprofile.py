#!/usr/bin/env python3
"""bench/goprofile.py — where a Go request's time goes (docs/go.md, issue 29).

For each server (examples/go/hello: the native API and the net/http adapter,
1 and 2 workers, epoll and io_uring), keep-alive `wrk -t1 -c64` on loopback:

  1. a counted run (DURATION s): server CPU from /proc/PID/stat, and
     `perf stat` on the server's threads for the syscalls by name
     (tracepoints), context switches and task migrations; the per-request
     figures divide by the requests wrk counted;
  2. a sampled run (SAMPLE s): `perf record -e cpu-clock` (the VM has no
     hardware counters), its samples sorted into kernel / weir's C loop /
     the cgo crossing / the Go runtime (scheduler, GC, allocator) / the
     handler and binding / libc;
  3. the server's own --stats on exit: cgo calls per request and the Go
     runtime's allocations, GC and scheduling events per request
     (runtime/metrics).

Usage: bench/goprofile.py HELLO_BINARY [OUT.json] [filter...]
       bench/goprofile.py build/bin/weir-demo [OUT.json] [filter...]   (the control: no Go)   (filter:
substrings of a case name such as native-epoll-w1). Bounded: about
(DURATION + SAMPLE + 3) s a case; loopback only. Timings on a shared machine
are provisional; the counts are not.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

DURATION = int(os.environ.get("PROFILE_DURATION", "5"))
SAMPLE = int(os.environ.get("PROFILE_SAMPLE", "3"))
CONNS = 64
SYSCALLS = ["futex", "epoll_pwait", "epoll_wait", "io_uring_enter", "read", "write", "writev", "sendmsg",
            "recvfrom", "sendto", "nanosleep", "sched_yield", "tgkill", "madvise", "accept4", "close",
            "rt_sigprocmask", "getpid", "epoll_ctl", "mmap", "munmap"]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / TICK


def wrk(url, secs):
    out = subprocess.run(["wrk", "-t1", f"-c{CONNS}", f"-d{secs}s", url], capture_output=True, text=True,
                         timeout=secs + 30).stdout
    m = re.search(r"(\d+) requests in", out)
    return int(m.group(1)) if m else 0


def start(hello, api, workers, backend):
    if api.startswith("demo"):  # weir-demo: the same engine with no Go (the control)
        mode = "driven" if api == "demo-driven" else "inline"
        cmd = [hello, "--mode", mode, "--workers", str(workers), "--backend",
               "uring" if backend == "io_uring" else backend, "--addr", "127.0.0.1:0"]
    else:
        cmd = [hello, "--api", api, "--workers", str(workers), "--backend", backend, "--stats",
               "--addr", "127.0.0.1:0"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"listening on (\S+)", line)
    if not m:
        p.kill()
        raise RuntimeError(f"{cmd}: {line!r} {p.stderr.read()}")
    return p, f"http://{m.group(1)}/"


def classify(report):
    """perf report --sort dso,sym lines -> shares by class."""
    cls = {"kernel": 0.0, "weir C": 0.0, "cgo crossing": 0.0, "Go scheduler": 0.0, "Go GC+alloc": 0.0,
           "Go other runtime": 0.0, "binding+handler": 0.0, "libc": 0.0, "other": 0.0}
    kern = {"tcp/ip": 0.0, "syscall entry/exit": 0.0, "futex+sched": 0.0, "epoll/io_uring": 0.0, "rest": 0.0}
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)", line)
        if not m:
            continue
        pct, dso, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4).strip()
        if kind == "k" or dso.startswith("[kernel"):
            cls["kernel"] += pct
            if re.search(r"tcp|inet|ip_|__ip|skb|sock|net_|napi|loopback|__dev_|netif|dst_|sk_|__sys_recv|__sys_send|"
                         r"copy_user|copyout|copyin|_copy_to_iter|_copy_from_iter|csum|raw_spin_unlock_bh|"
                         r"lock_sock|release_sock|do_softirq|__local_bh|neigh|validate_xmit|__napi|process_backlog", sym):
                kern["tcp/ip"] += pct
            elif re.search(r"futex|schedule|sched|switch_to|finish_task|wake|enqueue|dequeue|pick_next|"
                           r"update_curr|update_load|try_to_wake|ttwu|hrtimer|psi_|select_task|idle|task_switch|_raw_spin_unlock_irq", sym):
                kern["futex+sched"] += pct
            elif re.search(r"epoll|ep_|io_uring|io_|__io|eventfd", sym):
                kern["epoll/io_uring"] += pct
            elif re.search(r"entry_SYSCALL|syscall|do_syscall|exit_to_user|syscall_return|__x64_sys|"
                           r"fpregs|restore_fpregs|irqentry|native_|srso|retbleed|x86_return|__rseq|rseq", sym):
                kern["syscall entry/exit"] += pct
            else:
                kern["rest"] += pct
        elif "libweir" in dso:
            cls["weir C"] += pct
        elif dso.startswith("libc") or dso.startswith("ld-linux") or "libstdc++" in dso:
            cls["libc"] += pct
        elif sym.startswith(("runtime.cgocall", "runtime.asmcgocall", "runtime.entersyscall", "runtime.exitsyscall",
                             "runtime.reentersyscall", "_cgo_", "runtime.cgoIsGoPointer", "runtime.cgoCheck",
                             "runtime.save", "x_cgo", "crosscall", "runtime.exitsyscallfast", "runtime.casgstatus")) \
                or "weirgo_" in sym or "._Cfunc_" in sym:
            cls["cgo crossing"] += pct
        elif re.match(r"runtime\.(schedule|findRunnable|park_m|goready|ready|runqget|runqput|gopark|goschedImpl|"
                      r"gosched|mcall|execute|wakep|startm|stopm|handoffp|notesleep|notewakeup|futex|futexsleep|"
                      r"futexwakeup|lock2|unlock2|netpoll|checkTimers|retake|sysmon|usleep|runqsteal|runqgrab|"
                      r"stealWork|resetspinning|acquirep|releasep|mPark|semacquire|semrelease|chansend|chanrecv|"
                      r"send|recv|selectgo|nanotime|procyield|osyield|gogo|goexit|newproc|gfget|gfput|"
                      r"runqempty|pidleget|pidleput|injectglist|readyWithTime|casgstatus|systemstack)", sym):
            cls["Go scheduler"] += pct
        elif re.match(r"runtime\.(mallocgc|gcBgMarkWorker|gcDrain|scanobject|greyobject|markroot|sweep|mspan|"
                      r"mcache|mcentral|mheap|memclr|nextFreeFast|heapBits|gcWriteBarrier|wbBuf|bgsweep|"
                      r"gcAssist|scanblock|scanstack|findObject|newobject|makeslice|growslice|typePointers|"
                      r"spanOf|heapSetType|gcStart|gcMark)", sym) or sym.startswith("gcWriteBarrier"):
            cls["Go GC+alloc"] += pct
        elif sym.startswith("runtime.") or sym.startswith("internal/") or sym.startswith("sync"):
            cls["Go other runtime"] += pct
        elif dso.startswith("goperf-hello") or dso.endswith(".test") or "hello" in dso:
            cls["binding+handler"] += pct
        else:
            cls["other"] += pct
    return cls, kern


def case(hello, api, workers, backend):
    p, url = start(hello, api, workers, backend)
    r = {"api": api, "workers": workers, "backend": backend}
    try:
        wrk(url, 1)  # warm-up
        with tempfile.NamedTemporaryFile("r", suffix=".txt") as st:
            ev = ["raw_syscalls:sys_enter", "context-switches", "cpu-migrations"] + \
                 [f"syscalls:sys_enter_{s}" for s in SYSCALLS]
            c0 = cpu_s(p.pid)
            ps = subprocess.Popen(["perf", "stat", "-x,", "-o", st.name, "-e", ",".join(ev), "-p", str(p.pid),
                                   "--", "sleep", str(DURATION + 1)], stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            n = wrk(url, DURATION)
            c1 = cpu_s(p.pid)
            ps.wait()
            counts = {}
            for line in open(st.name):
                f = line.strip().split(",")
                if len(f) > 2 and f[0].replace(".", "").isdigit():
                    counts[f[2].replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "all")] = \
                        float(f[0])
        r["requests"] = n
        r["rps"] = n / DURATION
        r["cpu_us_per_req"] = (c1 - c0) * 1e6 / max(n, 1)
        # perf stat ran about 1.3 s beyond wrk's run, with the server idle: its waits then add a few
        per = {k: v / max(n, 1) for k, v in counts.items() if v}
        r["per_req"] = per
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "perf.data")
            pr = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", data, "-p",
                                   str(p.pid), "--", "sleep", str(SAMPLE)], stderr=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL)
            time.sleep(0.1)
            wrk(url, SAMPLE)
            pr.wait()
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "dso,sym", "--no-children"],
                                 capture_output=True, text=True).stdout
            r["classes"], r["kernel"] = classify(rep)
            r["top"] = [l.strip() for l in rep.splitlines() if re.match(r"\s*[\d.]+%", l)][:25]
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    m = re.search(r"requests (\d+) polls (\d+) wakes (\d+) direct-responds (\d+) cgo-calls/request ([\d.]+)", err)
    if m:
        r["cgo_per_req"] = float(m.group(5))
        r["polls_per_req"] = int(m.group(2)) / max(int(m.group(1)), 1)
    m = re.search(r"runtime allocs/request ([\d.]+) bytes/request ([\d.]+) gc-cycles (\d+) gc-cpu-share ([\d.]+) "
                  r"sched-events/request ([\d.]+)", err)
    if m:
        r["allocs_per_req"], r["bytes_per_req"] = float(m.group(1)), float(m.group(2))
        r["gc_cycles"], r["gc_cpu_share"], r["sched_per_req"] = int(m.group(3)), float(m.group(4)), float(m.group(5))
    return r


def main():
    hello = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else "goprofile.json"
    filt = sys.argv[3:]
    res = []
    # a weir-demo binary profiles the C engine alone (inline and driven), the control for the Go figures
    apis = ["demo", "demo-driven"] if "weir-demo" in os.path.basename(hello) else ["native", "nethttp"]
    for api in apis:
        for backend in ["epoll", "io_uring"]:
            for workers in [1, 2]:
                name = f"{api}-{'uring' if backend == 'io_uring' else 'epoll'}-w{workers}"
                if filt and not any(f in name for f in filt):
                    continue
                r = case(hello, api, workers, backend)
                r["name"] = name
                res.append(r)
                pr = r["per_req"]
                print(f"{name}: {r['rps']:.0f} req/s, {r['cpu_us_per_req']:.2f} us/req, syscalls {pr.get('all', 0):.3f} "
                      f"(futex {pr.get('futex', 0):.3f}, epoll_pwait {pr.get('epoll_pwait', 0):.3f}, "
                      f"io_uring_enter {pr.get('io_uring_enter', 0):.3f}, read {pr.get('read', 0):.3f}, "
                      f"write {pr.get('write', 0):.3f}, writev {pr.get('writev', 0):.3f}, "
                      f"sendmsg {pr.get('sendmsg', 0):.3f}, recvfrom {pr.get('recvfrom', 0):.3f}, "
                      f"nanosleep {pr.get('nanosleep', 0):.3f}), cs {pr.get('context-switches', 0):.3f}, "
                      f"cgo {r.get('cgo_per_req', -1):.3f}, allocs {r.get('allocs_per_req', -1):.3f} "
                      f"({r.get('bytes_per_req', -1):.0f} B), gc {r.get('gc_cycles', -1)} "
                      f"({100 * r.get('gc_cpu_share', 0):.1f}%), sched {r.get('sched_per_req', -1):.3f}", flush=True)
                print("   classes: " + ", ".join(f"{k} {v:.1f}%" for k, v in r["classes"].items()) +
                      " | kernel: " + ", ".join(f"{k} {v:.1f}%" for k, v in r["kernel"].items()), flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
