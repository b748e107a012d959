"""What scripts/bench-go runs: each server kind's command, label and
GOMAXPROCS, building them, and one running server."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from .common import BIN, OUT, PREFIX, ROOT, log, rel, run

FASTHTTP_VERSION = "v1.78.0"
CELERIS = "github.com/goceleris/celeris@v1.5.8"
CPUS = os.cpu_count()


def _weir(api, backend, *extra, workers=1):
    return ["weir-hello", "--api", api, "--workers", str(workers), "--backend", backend, *extra]


def _demo(*extra):  # weir's C demo: the engine without Go, as scripts/run-bench runs it
    return ["@build/bin/weir-demo", "--workers", "1", "--mode", "inline", "--app", "hello", *extra]


# kind: (label, command, GOMAXPROCS). A command's first word is a binary in
# build/bench/go/bin, or with "@" a path in the tree that make all builds.
# Every Go server runs with Go's default GOMAXPROCS (every CPU), as a user
# would run it; each weir server has one worker, celeris (which refuses fewer)
# two; the native API also with 2 workers (one per core, as a user runs it:
# issue 29's 2-worker efficiency). One row gives weir GOMAXPROCS=1, kept
# there (--keep-gomaxprocs: the binding would raise it to Workers+1), to show
# what a P per worker and no spare costs: the runtime hands a blocked poll's
# P to a new thread.
KINDS = {
    "weir-native": ("weir, native API, epoll", _weir("native", "epoll"), CPUS),
    "weir-native-uring": ("weir, native API, io_uring", _weir("native", "io_uring"), CPUS),
    "weir-native-w2": ("weir, native API, epoll, 2 workers", _weir("native", "epoll", workers=2), CPUS),
    "weir-native-uring-w2": ("weir, native API, io_uring, 2 workers", _weir("native", "io_uring", workers=2), CPUS),
    # Config.SchedPass (go-binding/sched_yield.go, opt-in): the inline worker
    # passes through the Go scheduler every 8 ms, so sysmon stops retaking
    # its P (docs/go.md, "Where a Go request's time goes").
    "weir-native-uring-sp": ("weir, native API, io_uring, --sched-pass",
                             _weir("native", "io_uring", "--sched-pass"), CPUS),
    "weir-native-uring-w2-sp": ("weir, native API, io_uring, 2 workers, --sched-pass",
                                _weir("native", "io_uring", "--sched-pass", workers=2), CPUS),
    "weir-native-uring-1p": ("weir, native API, io_uring, GOMAXPROCS=1",
                             _weir("native", "io_uring", "--keep-gomaxprocs"), 1),
    "weir-nethttp": ("weir, net/http adapter (async), epoll", _weir("nethttp", "epoll"), CPUS),
    "weir-nethttp-uring": ("weir, net/http adapter (async), io_uring", _weir("nethttp", "io_uring"), CPUS),
    "weir-inline": ("weir, net/http adapter --inline, epoll", _weir("nethttp", "epoll", "--inline"), CPUS),
    "weir-inline-uring": ("weir, net/http adapter --inline, io_uring",
                          _weir("nethttp", "io_uring", "--inline"), CPUS),
    "nethttp": ("net/http", ["nethttp"], CPUS),
    "fasthttp": (f"fasthttp {FASTHTTP_VERSION}", ["fasthttp"], CPUS),
    "celeris-epoll": ("celeris v1.5.8, its epoll engine, 2 workers",
                      ["celeris", "--engine", "epoll", "--workers", "2"], CPUS),
    "celeris-iouring": ("celeris v1.5.8, its io_uring engine, 2 workers asked",
                        ["celeris", "--engine", "iouring", "--workers", "2"], CPUS),
    "weir-demo": ("weir-demo (C, no Go), epoll", _demo(), None),
    "weir-demo-uring": ("weir-demo (C, no Go), io_uring", _demo("--backend", "uring"), None),
    "floor": ("floor: a bare epoll loop (C)", ["@build/bench/floor"], None),
    "uring-floor": ("floor: a bare io_uring loop (C)", ["@build/bench/uring-floor"], None),
}
ALL = list(KINDS)
SERVERS = [s for s in os.environ.get("BENCH_GO_SERVERS", ",".join(ALL)).split(",") if s]
for _s in SERVERS:
    if _s not in KINDS:
        sys.exit(f"bench-go: BENCH_GO_SERVERS names {_s!r}; known: {', '.join(ALL)}")
LABEL = {k: v[0] for k, v in KINDS.items()}


def is_weir(kind):
    """A Go server on weir (one with the binding's --stats counters)."""
    return kind.startswith("weir-") and not kind.startswith("weir-demo")


def binary(kind):
    first = KINDS[kind][1][0]
    return os.path.join(ROOT, first[1:]) if first.startswith("@") else os.path.join(BIN, first)


def command(kind, stats=False):
    cmd = [binary(kind)] + KINDS[kind][1][1:]
    return cmd + (["--stats"] if stats else []) + ["--addr", "127.0.0.1:0"]


def gomaxprocs(kind):
    return KINDS[kind][2]


def server_env(kind):
    env = dict(os.environ)
    env.pop("GOMAXPROCS", None)
    env.pop("GODEBUG", None)
    if gomaxprocs(kind) is not None:
        env["GOMAXPROCS"] = str(gomaxprocs(kind))
    return env


class Server:
    """One server process on 127.0.0.1 (an ephemeral port); stop() ends it."""

    def __init__(self, kind, stats=False):
        self.kind = kind
        self.cmd = command(kind, stats)
        self.err_path = os.path.join(OUT, f"{kind}{'-stats' if stats else ''}.log")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=self.err, text=True,
                                     env=server_env(kind))
        line = self.proc.stdout.readline()
        m = re.match(r"listening on .*:(\d+)$", line.strip())
        if not m:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"{kind}: no 'listening on' line (got {line!r}); see {self.err_path}")
        self.port = int(m.group(1))

    @property
    def pid(self):
        return self.proc.pid

    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    def stop(self):
        """SIGTERM, a graceful exit within 15 s, else SIGKILL; returns stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        with open(self.err_path) as f:
            return f.read()


def answer(url):
    """The first response's status line and field names, so the table can
    show what each server sends."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
        data = b""
        while b"Hello, World!" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    head = data.decode("latin-1").split("\r\n\r\n")[0].split("\r\n")
    return head[0], sorted(h.split(":")[0].lower() for h in head[1:])


def celeris_source():
    """The shared celeris v1.5.8 snapshot (the module proxy here refuses the
    module), looked for as tests/scripts/go_celeris.sh does; None if absent."""
    for c in (os.environ.get("WEIR_CELERIS_SRC", ""),
              os.path.join(os.path.dirname(ROOT), "shared", "third_party", "celeris-v1.5.8"),
              "/work/shared/third_party/celeris-v1.5.8"):
        if c and os.path.isfile(os.path.join(c, "go.mod")):
            return c
    return None


def _build_weir(go_env):
    # As a user would: the installed library, found through pkg-config; the
    # CGO_* variables are keyed by Go's build cache, pkg-config's output is not.
    # The library as last built (make all), never rebuilt here: others
    # build in the same tree, and a half-edited source must not stop us.
    lib = os.path.join(ROOT, "build", "lib")
    libs = sorted(rel(os.path.join(lib, f)) for f in os.listdir(lib)
                  if f.startswith("libweir.")) if os.path.isdir(lib) else []
    if "build/lib/libweir.so" not in libs:
        sys.exit("bench-go: build/lib/libweir.so is not built (make all)")
    if subprocess.run(["make", "-q", "lib"], cwd=ROOT, capture_output=True).returncode != 0:
        log("note: the library's sources changed since build/lib was built; benchmarking the built one")
    run(["make", "-s", "install", f"PREFIX={PREFIX}"] + [f"--old-file={f}" for f in libs])
    env = dict(go_env, PKG_CONFIG_PATH=os.path.join(PREFIX, "lib", "pkgconfig"),
               CGO_CFLAGS=f"-O2 -g -I{PREFIX}/include",
               CGO_LDFLAGS=f"-O2 -g -L{PREFIX}/lib -Wl,-rpath,{PREFIX}/lib")
    run(["go", "build", "-o", os.path.join(BIN, "weir-hello"), "./hello"],
        cwd=os.path.join(ROOT, "examples", "go"), env=env)


def _build_celeris(go_env, src):
    """bench/go-celeris through a scratch go.mod (-modfile) whose replace
    points at the snapshot: nothing of celeris enters the repository."""
    mod = os.path.join(ROOT, "bench", "go-celeris")
    with tempfile.TemporaryDirectory() as tmp:
        for f in ("go.mod", "go.sum"):
            shutil.copy(os.path.join(mod, f), tmp)
        modfile = os.path.join(tmp, "go.mod")
        run(["go", "mod", "edit", f"-replace=github.com/goceleris/celeris={src}", modfile], cwd=mod)
        run(["go", "build", f"-modfile={modfile}", "-o", os.path.join(BIN, "celeris"), "."], cwd=mod,
            env=dict(go_env, GOFLAGS="-buildvcs=false -mod=mod"))


def build():
    """Builds what SERVERS needs; returns the celeris snapshot used (or None,
    and the celeris kinds are dropped from SERVERS)."""
    os.makedirs(BIN, exist_ok=True)
    for tool in ("go", "wrk", "make", "pkg-config"):
        if not shutil.which(tool):
            sys.exit(f"bench-go: {tool} is missing (scripts/bootstrap installs it)")
    go_env = dict(os.environ, GOWORK="off", GOFLAGS="-buildvcs=false")
    if any(is_weir(s) for s in SERVERS):
        _build_weir(go_env)
    others = sorted({KINDS[s][1][0] for s in SERVERS if KINDS[s][1][0] in ("nethttp", "fasthttp")})
    if others:
        run(["go", "build", "-o", BIN + "/"] + [f"./{s}" for s in others],
            cwd=os.path.join(ROOT, "bench", "go"), env=go_env)
    src = None
    if any(s.startswith("celeris-") for s in SERVERS):
        src = celeris_source()
        if src:
            _build_celeris(go_env, src)
        else:
            log("celeris v1.5.8 source not found (../shared/third_party, WEIR_CELERIS_SRC): celeris left out")
            SERVERS[:] = [s for s in SERVERS if not s.startswith("celeris-")]
    for kind in list(SERVERS):  # the C rows come from make all
        if not os.access(binary(kind), os.X_OK):
            log(f"{rel(binary(kind))} is not built (make all): {kind} left out")
            SERVERS.remove(kind)
    return src
