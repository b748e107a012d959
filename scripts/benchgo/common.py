"""Settings shared by scripts/bench-go's parts, and its log."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "build", "bench", "go")
BIN = os.path.join(OUT, "bin")
PREFIX = os.path.join(OUT, "weir")  # the installed libweir the weir servers link
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
BEGIN = "<!-- bench-go: begin (scripts/bench-go writes this section) -->"
END = "<!-- bench-go: end -->"

QUICK = os.environ.get("BENCH_QUICK") == "1"
RUNS = int(os.environ.get("BENCH_RUNS", "2" if QUICK else "5"))
DURATION = int(os.environ.get("BENCH_DURATION", "2" if QUICK else "5"))
CONNS = 64
PIPELINE = 16
PIPELINE_LUA = os.path.join(ROOT, "bench", "wrk", "pipeline.lua")  # shared with scripts/run-bench
SCENARIOS = [("keep-alive", []), ("pipeline-16", ["-s", PIPELINE_LUA])]
SCEN_TEXT = {"keep-alive": "keep-alive", "pipeline-16": "16-deep pipelining"}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def rel(path):
    return os.path.relpath(path, ROOT) if path.startswith(ROOT) else path


def log(*a):
    """To the terminal and to build/bench/go/bench-go.log (run-bench's child
    prints where nobody may be looking)."""
    print(*a, flush=True)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "bench-go.log"), "a") as f:
        print(*a, file=f)


def run(cmd, cwd=ROOT, env=None):
    r = subprocess.run(cmd, cwd=cwd, env=env, text=True, capture_output=True)
    if r.returncode != 0:
        sys.exit(f"bench-go: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout
