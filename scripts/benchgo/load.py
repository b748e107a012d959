"""Load and its accounting: wrk runs, the server's CPU per request, what
others on the machine used meanwhile, waiting (bounded) for quiet, and the
cgo crossings of a fresh weir server."""
import os
import platform
import re
import resource
import subprocess
import time

from .common import CLK_TCK, CONNS, DURATION, PIPELINE, QUICK, RUNS, SCENARIOS, log, rel
from .servers import SERVERS, Server, is_weir


def wrk(url, extra, duration):
    cmd = ["wrk", "-t1", f"-c{CONNS}", f"-d{duration}s"] + extra + [url]
    if "-s" in extra:
        cmd += ["--", str(PIPELINE)]
    out = subprocess.run(cmd, text=True, capture_output=True, timeout=duration + 60).stdout
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not m or not rps:
        raise RuntimeError(f"wrk output not understood:\n{out}")
    errs = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "requests": int(m.group(1)),
        "rps": float(rps.group(1)),
        "socket_errors": sum(int(x) for x in errs.groups()) if errs else 0,
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "cmd": " ".join(rel(a) for a in cmd),
    }

def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, all threads

def machine_task_ticks():
    """user + nice + system of every CPU (irq/softirq left out: mostly the
    benchmark's own loopback traffic)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2]

def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime

def busy_fraction(seconds=2.0):
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = sample()
    time.sleep(seconds)
    t1, i1 = sample()
    return 1.0 - (i1 - i0) / max(t1 - t0, 1)

def other_harnesses():
    """Pids of other benchmark harnesses (scripts/run-bench, scripts/bench-go)
    not among our ancestors: two load tests at once spoil both."""
    mine, pid = set(), os.getpid()
    while pid > 1:
        mine.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            break
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in mine:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith((b"scripts/run-bench", b"scripts/bench-go")) for a in args[:3]):
            found.append(int(d))
    return found

def wait_for_harnesses():
    end = time.monotonic() + float(os.environ.get("BENCH_WAIT_HARNESS", "60" if QUICK else "1800"))
    others = other_harnesses()
    while others and time.monotonic() < end:
        log(f"another benchmark runs (pid {', '.join(map(str, others))}): waiting for it to finish")
        time.sleep(15)
        others = other_harnesses()
    if others:
        log("warning: another benchmark still runs; figures will be noisy")
    return others

def wait_for_quiet(seconds=None):
    """Others build and test on the same two cores: wait (bounded) for them."""
    if seconds is None:
        seconds = float(os.environ.get("BENCH_WAIT", "10" if QUICK else "600"))
    end = time.monotonic() + seconds
    limit = float(os.environ.get("BENCH_BUSY", "0.10"))
    busy = busy_fraction()
    while busy > limit and time.monotonic() < end:
        log(f"machine {busy:.0%} busy (load {os.getloadavg()[0]:.2f}): waiting for it to quieten")
        time.sleep(8)
        busy = busy_fraction()
    if busy > limit:
        log(f"warning: machine still {busy:.0%} busy; figures will be noisy")
    return busy

def measure(s, extra):
    """One wrk run against s, with the server's CPU, wrk's, and what others used."""
    before, m0, c0 = cpu_ticks(s.pid), machine_task_ticks(), children_cpu_s()
    r = wrk(s.url(), extra, DURATION)
    r["cpu_s"] = (cpu_ticks(s.pid) - before) / CLK_TCK
    wrk_s = children_cpu_s() - c0
    r["wrk_share"] = wrk_s / DURATION
    # what neither the server nor wrk used: others' builds and tests
    r["others_share"] = max(0.0, (machine_task_ticks() - m0) / CLK_TCK - r["cpu_s"] - wrk_s) / DURATION
    r["cpu_us_per_req"] = r["cpu_s"] * 1e6 / max(r["requests"], 1)
    return r

def throughput(servers, results):
    """A run that others disturbed (their CPU above BENCH_MAX_OTHERS of a core)
    is retried after a bounded wait for quiet, up to BENCH_RETRIES times; the
    last attempt is kept and counted as noisy (as scripts/run-bench does)."""
    max_others = float(os.environ.get("BENCH_MAX_OTHERS", "0.15"))
    retries = int(os.environ.get("BENCH_RETRIES", "0" if QUICK else "3"))
    budget_end = time.monotonic() + float(os.environ.get("BENCH_RETRY_BUDGET", "600"))
    results["retry"] = {"max_others": max_others, "retries": retries}
    for name, extra in SCENARIOS:
        for i in range(RUNS):
            order = servers if i % 2 == 0 else list(reversed(servers))
            for s in order:
                for attempt in range(retries + 1):
                    r = measure(s, extra)
                    r["round"], r["attempts"] = i, attempt + 1
                    r["noisy"] = r["others_share"] > max_others
                    log(f"  {name:11} {s.kind:18} run {i + 1}: {r['rps']:>9.0f} req/s  "
                        f"{r['cpu_us_per_req']:6.2f} us CPU/req  errors {r['socket_errors']} "
                        f"non-2xx {r['non2xx']}  wrk {r['wrk_share']:.0%}  others {r['others_share']:.0%} "
                        f"of a core{'  (noisy)' if r['noisy'] else ''}")
                    if not r["noisy"] or attempt == retries or time.monotonic() > budget_end:
                        break
                    wait_for_quiet(60)
                results["runs"].setdefault(name, {}).setdefault(s.kind, []).append(r)
                time.sleep(0.3)

def crossings(results):
    """cgo calls per request under load: a fresh weir server per kind and
    scenario, so its lifetime counters hold that one run and nothing else."""
    for kind in [s for s in SERVERS if is_weir(s)]:
        for name, extra in SCENARIOS:
            s = Server(kind, stats=True)
            try:
                r = wrk(s.url(), extra, DURATION)
            finally:
                err = s.stop()
            m = re.search(r"requests (\d+) polls (\d+) wakes (\d+) direct-responds (\d+) "
                          r"cgo-calls/request ([\d.]+)", err)
            if not m:
                raise RuntimeError(f"{kind}: no --stats line on exit:\n{err}")
            ex, polls, wakes, direct = (int(m.group(i)) for i in range(1, 5))
            e = {"exchanges": ex, "polls": polls, "wakes": wakes, "direct": direct,
                 "per_req": (polls + wakes + direct) / max(ex, 1),
                 "wrk_requests": r["requests"], "rps": r["rps"]}
            results["crossings"].setdefault(name, {})[kind] = e
            log(f"  cgo calls   {kind:18} {name:11}: {polls} polls + {wakes} wakes + {direct} direct "
                f"responds over {ex} requests = {e['per_req']:.4f} per request")

def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])

    def version(cmd):
        try:
            r = subprocess.run(cmd, text=True, capture_output=True, timeout=10)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "unknown"

    return {"cpu": cpu, "cores": os.cpu_count(), "mem_gib": round(mem_kb / 1048576, 1),
            "kernel": platform.release(), "go": version(["go", "version"]),
            "wrk": version(["wrk", "-v"]).split(" Copyright")[0]}
