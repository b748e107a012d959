/*
 * demo_args.h — weir-demo's command line: flags into a weir_config plus the
 * demo's own choices. Header-only (see demo_json.h for why).
 */
#ifndef WEIR_DEMO_ARGS_H
#define WEIR_DEMO_ARGS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"

/* The controller's tunables by the names --controller takes and SIGHUP's
 * controller.config.* lines print: the fields of weir_adaptive_config
 * (their defaults and meaning are weir's: weir.h, docs/adaptive.md). */
#define DEMO_CTL_TUNABLES(X)                                                                                           \
    X(up_conns) X(up_rps) X(down_conns) X(down_rps) X(max_error_permille) X(hold) X(cooldown_ms) X(flap_count)         \
        X(flap_window_ms) X(lockout_ms)

enum demo_mode { DEMO_INLINE, DEMO_DRIVEN, DEMO_DEFERRED };
enum demo_app { DEMO_APP_HELLO, DEMO_APP_ECHO };

typedef struct demo_opts {
    weir_config cfg;
    int backend_auto; /* --backend auto: io_uring, else epoll */
    int adaptive;     /* --adaptive: a standby engine on the other backend, SIGWINCH switches */
    int conn_events;  /* --conn-events: each connection's open and close on stdout */
    int controller;   /* --adaptive-controller: switch by the load (weir_adaptive_*) */
    int controller_tuned;            /* --controller or --controller-interval-ms was given */
    weir_adaptive_config controller_cfg; /* --controller and --controller-interval-ms, over weir's defaults */
    char host[64];          /* cfg.host points here */
    weir_http1_limits limits; /* cfg.limits points here */
    enum demo_mode mode;
    enum demo_app app;
    uint32_t defer_threads; /* deferred mode's answering pool */
    const char *static_dir; /* --static DIR: GET /files/<name> answers from it; NULL: 404 */
    int stream_body_set;    /* --stream-body-bytes given; else bodies above --max-body stream */
    uint64_t body_max;      /* --max-body: every route but POST /upload (limits.max_body is the
                               engine's ceiling, the larger of it and upload_max) */
    uint64_t upload_max;    /* --upload-max-bytes: POST /upload's own limit; WEIR_BODY_UNLIMITED */
    const char *upgrade_socket; /* --upgrade-socket PATH: SIGQUIT offers this process there */
    const char *take_over;      /* --take-over PATH: take the listeners and connections from there */
    weir_handover_options handover; /* --handover-* */
    int systemd; /* --systemd: listen on what systemd passed (demo_systemd.h), else --addr */
    int fdstore; /* --fdstore: SIGTERM stores the listeners and connections in systemd's fd store */
} demo_opts;

static const char demo_usage[] =
    "usage: weir-demo [options]\n"
    "  --addr HOST:PORT         numeric address to listen on ([::1]:PORT for IPv6); port 0 picks one\n"
    "                           (default 127.0.0.1:8080)\n"
    "  --adaptive               a standby engine on the other backend shares the port;\n"
    "                           SIGWINCH switches to it (docs/transplant.md)\n"
    "  --adaptive-controller    with --adaptive: switch by the load, off by default (docs/controller.md)\n"
    "  --controller-interval-ms N  one sample of the active engine per N ms (default 1000)\n"
    "  --controller K=N,...     the controller's thresholds, any of (defaults):\n"
    "                           up_conns=64 up_rps=20000 down_conns=16 down_rps=5000\n"
    "                           max_error_permille=50 hold=3 cooldown_ms=10000\n"
    "                           flap_count=3 flap_window_ms=60000 lockout_ms=300000\n"
    "  --backend epoll|uring|auto  (default epoll; auto: io_uring where this kernel\n"
    "                           runs it, else epoll, with the reason logged)\n"
    "  --workers N              event loops; 0 = online CPUs (default 1)\n"
    "  --mode inline|driven|deferred\n"
    "                           inline: handlers run on the loop; driven: the demo's threads poll the\n"
    "                           workers; deferred: handlers defer to a pool of demo threads (default inline)\n"
    "  --app hello|echo         hello: GET / /fast /slow?ms=N /stream?n=N&size=S /files/NAME, POST /echo;\n"
    "                           echo: the parsed request as JSON\n"
    "  --static DIR             GET /files/NAME answers the regular file DIR/NAME (weir_serve_file)\n"
    "  --stream-body-bytes N    bodies of N bytes or more (and chunked ones, and those expecting\n"
    "                           100-continue) are read as they arrive (POST /upload up to\n"
    "                           --upload-max-bytes);\n"
    "                           0 buffers every body (default: --max-body + 1)\n"
    "  --upload-max-bytes N|unlimited\n"
    "                           POST /upload's own body limit (413 past it); --max-body holds for\n"
    "                           every other route (default 4294967296, 4 GiB)\n"
    "  --defer-threads N        deferred mode's pool size (default 4)\n"
    "  --accept-batch N         accepts per door per pass; 0 drains the backlog (default 16)\n"
    "  --linger-ms N            pause linger (default 1500)\n"
    "  --no-defer-accept        do not set TCP_DEFER_ACCEPT on the listeners\n"
    "  --max-connections N      open connections per worker; a client over it is answered 503 with\n"
    "                           Retry-After: 1 and closed (default 10000)\n"
    "  --max-request-line N     --max-header-bytes N   --max-headers N   --max-body N\n"
    "  --header-timeout-ms N    --idle-timeout-ms N   --body-timeout-ms N   --write-timeout-ms N\n"
    "  --request-timeout-ms N   a request's whole head and body must arrive within N ms, or 408\n"
    "                           (default 300000; 0 = off)\n"
    "  --min-body-rate BYTES_PER_S  a request body slower than this over a 10 s window is cut, 408\n"
    "                           (default 500; 0 = off)\n"
    "  --min-send-rate BYTES_PER_S  a client reading its answer slower than this over a 10 s window\n"
    "                           (time with output queued) is closed (default 500; 0 = off)\n"
    "  --upgrade-socket PATH    SIGQUIT hands the listeners and every connection to a successor\n"
    "                           started with --take-over PATH, then exits (docs/upgrade.md)\n"
    "  --take-over PATH         take the listeners and connections of the demo offering at PATH\n"
    "                           instead of listening (--addr is ignored)\n"
    "  --handover-deadline-ms N in-flight requests' time to reach their boundary (default 10000)\n"
    "  --handover-wait-ms N     time to wait for a successor / to find an offer (default 10000)\n"
    "  --handover-listeners-only  hand over the listeners only; connections close (comparison)\n"
    "  --systemd                listen on the sockets systemd passed ($LISTEN_FDS) and adopt the\n"
    "                           connections its fd store kept; --addr when none (docs/upgrade-systemd.md)\n"
    "  --fdstore                SIGTERM stores the listeners and connections in systemd's fd store\n"
    "                           ($NOTIFY_SOCKET) before the exit; --handover-deadline-ms bounds it\n"
    "  --conn-events            print each connection's open and close on stdout, one line each:\n"
    "                           conn open id=N worker=W peer=ADDR / conn close id=N worker=W\n"
    "                           reason=NAME peer=ADDR (NAME as the metrics' closes.NAME)\n"
    "  --proxy-protocol         every connection begins with a PROXY header (v1 or v2, as HAProxy's\n"
    "                           send-proxy / send-proxy-v2 send): its source is the peer --app echo shows\n"
    "  --proxy-trusted CIDRS    sources allowed to send one, e.g. 10.0.0.0/8,::1 (default any)\n"
    "  --proxy-timeout-ms N     the header's deadline from the accept (default 5000)\n"
    "  --overload LIST          the overload manager's watermarks, any subset of\n"
    "                           inflight=N,conns=N,fds=N,mem_mb=N (inflight and conns per worker, fds\n"
    "                           per process, mem_mb per engine): past 80 % of the fullest keep-alive\n"
    "                           turns off, 90 % accepting slows, 95 % it pauses, 100 % new requests get\n"
    "                           503 + Retry-After (docs/api.md 5.10; default off)\n"
    "  --trim-interval-ms N|off the memory trim's window: a burst's connection buffers go back\n"
    "                           3 windows after it (default 1000; off keeps them)\n"
    "  --protocols http1|h2c|auto  what the listeners speak: HTTP/1.1 only, HTTP/2 in cleartext\n"
    "                           only (prior knowledge), or both, told apart on the first bytes and\n"
    "                           by Upgrade: h2c (default auto; docs/http2.md)\n"
    "  --h2-max-streams N       HTTP/2 streams a connection may have open (default 100)\n"
    "  --version                print weir's version and exit\n"
    "signals: TERM/INT shut down gracefully; HUP prints metrics; USR1 begins a pause; USR2 resumes\n";

/* --overload inflight=N,conns=N,fds=N,mem_mb=N: 0 or -1 with *bad at the
 * item that does not parse. */
static int demo_overload_parse(weir_config *cfg, const char *v, const char **bad) {
    char buf[256];
    if (!*v || strlen(v) >= sizeof buf) {
        *bad = v;
        return -1;
    }
    strcpy(buf, v);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        char *end = NULL;
        unsigned long long n = eq && eq[1] ? strtoull(eq + 1, &end, 10) : 0;
        *bad = v + (item - buf);
        if (!eq || !end || *end || eq[1] == '-' || n > UINT32_MAX)
            return -1;
        *eq = 0;
        if (!strcmp(item, "inflight"))
            cfg->overload_inflight = (uint32_t)n;
        else if (!strcmp(item, "conns"))
            cfg->overload_conns = (uint32_t)n;
        else if (!strcmp(item, "fds"))
            cfg->overload_fds = (uint32_t)n;
        else if (!strcmp(item, "mem_mb"))
            cfg->overload_mem_mb = (uint32_t)n;
        else
            return -1;
    }
    return 0;
}

static int demo_bad(const char *what, const char *arg) {
    fprintf(stderr, "weir-demo: %s: %s\n%s", what, arg ? arg : "(missing)", demo_usage);
    return -1;
}

static int demo_u64(const char *s, uint64_t max, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

/* HOST:PORT or [V6]:PORT into o->host and cfg.port. */
static int demo_addr(demo_opts *o, const char *s) {
    const char *colon = strrchr(s, ':');
    if (!colon)
        return -1;
    const char *h = s;
    size_t hl = (size_t)(colon - s);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= sizeof o->host)
        return -1;
    uint64_t port;
    if (demo_u64(colon + 1, 65535, &port) != 0)
        return -1;
    memcpy(o->host, h, hl);
    o->host[hl] = 0;
    o->cfg.port = (uint32_t)port;
    return 0;
}

/* "name=N,name=N" over c: the names of DEMO_CTL_TUNABLES, any subset, any
 * order. Returns 0, or -1 with *bad at the offending item. */
static int ctl_config_parse(weir_adaptive_config *c, const char *spec, const char **bad) {
    const char *p = spec;
    while (*p) {
        const char *eq = strchr(p, '='), *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        *bad = p;
        if (!eq || eq > end)
            return -1;
        uint64_t *field = NULL;
#define CTL_KEY(name)                                                                                                  \
    if ((size_t)(eq - p) == sizeof #name - 1 && memcmp(p, #name, sizeof #name - 1) == 0)                               \
        field = &c->name;
        DEMO_CTL_TUNABLES(CTL_KEY)
#undef CTL_KEY
        uint64_t v = 0;
        const char *d = eq + 1;
        if (!field || d == end)
            return -1;
        for (; d < end; d++) {
            if (*d < '0' || *d > '9' || v > (UINT64_MAX - 9) / 10)
                return -1;
            v = v * 10 + (uint64_t)(*d - '0');
        }
        *field = v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* Fills o from argv. Returns 0, 1 after --help or --version, -1 after printing the usage. */
static int demo_parse_args(demo_opts *o, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    weir_config_init(&o->cfg);
    weir_http1_limits_init(&o->limits);
    o->cfg.limits = &o->limits;
    strcpy(o->host, "127.0.0.1");
    o->cfg.port = 8080;
    o->cfg.workers = 1;
    o->mode = DEMO_INLINE;
    o->app = DEMO_APP_HELLO;
    o->upload_max = 4294967296ull;
    o->defer_threads = 4;
    o->handover.size = sizeof o->handover;
    weir_adaptive_config_init(&o->controller_cfg);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            fputs(demo_usage, stdout);
            return 1;
        }
        if (!strcmp(f, "--version")) {
            printf("weir-demo (weir %s)\n", weir_version_string());
            return 1;
        }
        if (!strcmp(f, "--no-defer-accept")) {
            o->cfg.defer_accept = 0;
            continue;
        }
        if (!strcmp(f, "--handover-listeners-only")) {
            o->handover.flags |= WEIR_HANDOVER_LISTENERS_ONLY;
            continue;
        }
        if (!strcmp(f, "--systemd")) {
            o->systemd = 1;
            continue;
        }
        if (!strcmp(f, "--fdstore")) {
            o->fdstore = 1;
            continue;
        }
        if (!strcmp(f, "--adaptive")) {
            o->adaptive = 1;
            continue;
        }
        if (!strcmp(f, "--proxy-protocol")) {
            o->cfg.proxy_protocol = WEIR_PROXY_ON;
            continue;
        }
        if (!strcmp(f, "--conn-events")) {
            o->conn_events = 1;
            continue;
        }
        if (!strcmp(f, "--adaptive-controller")) {
            o->controller = 1;
            continue;
        }
        if (strncmp(f, "--", 2) != 0)
            return demo_bad("unexpected argument", f);
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            return demo_bad("missing value for", f);
        uint64_t n = 0;
        uint32_t *u32 = NULL;
        if (!strcmp(f, "--addr")) {
            if (demo_addr(o, v) != 0)
                return demo_bad("bad --addr (want HOST:PORT)", v);
        } else if (!strcmp(f, "--backend")) {
            /* The names are the library's (weir_backend_by_name), so a new
             * backend needs no change here. */
            int id = weir_backend_by_name(v);
            if (id > 0)
                o->cfg.backend = (uint32_t)id;
            else if (!strcmp(v, "auto"))
                o->backend_auto = 1, o->cfg.backend = WEIR_BACKEND_URING;
            else
                return demo_bad("bad --backend (want epoll, uring or auto)", v);
        } else if (!strcmp(f, "--mode")) {
            if (!strcmp(v, "inline"))
                o->mode = DEMO_INLINE;
            else if (!strcmp(v, "driven"))
                o->mode = DEMO_DRIVEN;
            else if (!strcmp(v, "deferred"))
                o->mode = DEMO_DEFERRED;
            else
                return demo_bad("bad --mode (want inline, driven or deferred)", v);
        } else if (!strcmp(f, "--upgrade-socket")) {
            o->upgrade_socket = v;
        } else if (!strcmp(f, "--take-over")) {
            o->take_over = v;
        } else if (!strcmp(f, "--proxy-trusted")) {
            o->cfg.proxy_trusted = v; /* checked by weir_engine_create (copied there) */
        } else if (!strcmp(f, "--static")) {
            o->static_dir = v;
        } else if (!strcmp(f, "--app")) {
            if (!strcmp(v, "hello"))
                o->app = DEMO_APP_HELLO;
            else if (!strcmp(v, "echo"))
                o->app = DEMO_APP_ECHO;
            else
                return demo_bad("bad --app (want hello or echo)", v);
        } else if (!strcmp(f, "--overload")) {
            const char *bad = NULL;
            if (demo_overload_parse(&o->cfg, v, &bad) != 0)
                return demo_bad("bad --overload item (want inflight=N,conns=N,fds=N,mem_mb=N)", bad);
        } else if (!strcmp(f, "--controller")) {
            const char *bad = NULL;
            if (ctl_config_parse(&o->controller_cfg, v, &bad) != 0)
                return demo_bad("bad --controller item (want NAME=N, names in --help)", bad);
            o->controller_tuned = 1;
        } else if (!strcmp(f, "--controller-interval-ms")) {
            if (demo_u64(v, 60000, &n) != 0 || n < 10)
                return demo_bad("bad --controller-interval-ms (want 10 to 60000)", v);
            o->controller_cfg.interval_ms = (uint32_t)n;
            o->controller_tuned = 1;
        } else if (!strcmp(f, "--upload-max-bytes")) {
            if (!strcmp(v, "unlimited"))
                o->upload_max = WEIR_BODY_UNLIMITED;
            else if (demo_u64(v, UINT64_MAX, &n) != 0)
                return demo_bad("bad --upload-max-bytes (want a number or unlimited)", v);
            else
                o->upload_max = n;
        } else if (!strcmp(f, "--trim-interval-ms")) {
            if (!strcmp(v, "off"))
                o->cfg.trim_interval_ms = WEIR_TRIM_OFF;
            else if (demo_u64(v, 3600000, &n) != 0 || n == 0)
                return demo_bad("bad --trim-interval-ms (want 1 to 3600000 or off)", v);
            else
                o->cfg.trim_interval_ms = (uint32_t)n;
        } else if (!strcmp(f, "--protocols")) {
            if (!strcmp(v, "http1"))
                o->cfg.protocols = WEIR_PROTO_HTTP1;
            else if (!strcmp(v, "h2c"))
                o->cfg.protocols = WEIR_PROTO_H2C;
            else if (!strcmp(v, "auto"))
                o->cfg.protocols = WEIR_PROTO_AUTO;
            else
                return demo_bad("bad --protocols (want http1, h2c or auto)", v);
        } else if (!strcmp(f, "--h2-max-streams")) {
            if (demo_u64(v, 10000, &n) != 0 || n == 0)
                return demo_bad("bad --h2-max-streams (want 1 to 10000)", v);
            o->cfg.h2_max_streams = (uint32_t)n;
        } else if (!strcmp(f, "--max-body")) {
            if (demo_u64(v, UINT64_MAX, &n) != 0)
                return demo_bad("bad number for --max-body", v);
            o->limits.max_body = n;
        } else {
            if (!strcmp(f, "--workers"))
                u32 = &o->cfg.workers;
            else if (!strcmp(f, "--defer-threads"))
                u32 = &o->defer_threads;
            else if (!strcmp(f, "--accept-batch"))
                u32 = &o->cfg.accept_batch;
            else if (!strcmp(f, "--linger-ms"))
                u32 = &o->cfg.linger_ms;
            else if (!strcmp(f, "--max-connections"))
                u32 = &o->cfg.max_connections;
            else if (!strcmp(f, "--max-request-line"))
                u32 = &o->limits.max_request_line;
            else if (!strcmp(f, "--max-header-bytes"))
                u32 = &o->limits.max_header_bytes;
            else if (!strcmp(f, "--max-headers"))
                u32 = &o->limits.max_headers;
            else if (!strcmp(f, "--header-timeout-ms"))
                u32 = &o->cfg.header_timeout_ms;
            else if (!strcmp(f, "--idle-timeout-ms"))
                u32 = &o->cfg.idle_timeout_ms;
            else if (!strcmp(f, "--body-timeout-ms"))
                u32 = &o->cfg.body_timeout_ms;
            else if (!strcmp(f, "--handover-deadline-ms"))
                u32 = &o->handover.deadline_ms;
            else if (!strcmp(f, "--handover-wait-ms"))
                u32 = &o->handover.wait_ms;
            else if (!strcmp(f, "--proxy-timeout-ms"))
                u32 = &o->cfg.proxy_timeout_ms;
            else if (!strcmp(f, "--write-timeout-ms"))
                u32 = &o->cfg.write_timeout_ms;
            else if (!strcmp(f, "--request-timeout-ms"))
                u32 = &o->cfg.request_timeout_ms;
            else if (!strcmp(f, "--min-body-rate"))
                u32 = &o->cfg.min_body_rate;
            else if (!strcmp(f, "--min-send-rate"))
                u32 = &o->cfg.min_send_rate;
            else if (!strcmp(f, "--stream-body-bytes")) {
                u32 = &o->cfg.stream_body_bytes;
                o->stream_body_set = 1;
            }
            else
                return demo_bad("unknown option", f);
            if (demo_u64(v, UINT32_MAX, &n) != 0)
                return demo_bad("bad number", v);
            *u32 = (uint32_t)n;
            // The binding deadlines' flags say 0 for off; weir's 0 is the default.
            if (n == 0 && (u32 == &o->cfg.request_timeout_ms || u32 == &o->cfg.min_body_rate ||
                           u32 == &o->cfg.min_send_rate))
                *u32 = WEIR_DEADLINE_OFF;
        }
    }
    if (o->mode == DEMO_DEFERRED && o->defer_threads == 0)
        return demo_bad("--defer-threads must be at least 1 in deferred mode", "0");
    if (o->adaptive && o->mode == DEMO_DRIVEN)
        return demo_bad("--adaptive runs inline or deferred (its engines run their own loops)", "driven");
    if (o->controller && !o->adaptive)
        return demo_bad("--adaptive-controller needs --adaptive", "it switches the standby --adaptive starts");
    if (o->controller_tuned && !o->controller)
        return demo_bad("--controller and --controller-interval-ms need --adaptive-controller", "it is off without it");
    if ((o->upgrade_socket || o->take_over) && o->adaptive)
        return demo_bad("--adaptive cannot be handed over", "its standby engine would be left behind");
    const char *why = weir_adaptive_config_error(&o->controller_cfg);
    if (why)
        return demo_bad("bad --controller", why);
    o->cfg.host = o->host;
    if (!o->stream_body_set) /* what --max-body allows stays buffered; past it, POST /upload reads it */
        o->cfg.stream_body_bytes = o->limits.max_body >= UINT32_MAX ? 0 : (uint32_t)o->limits.max_body + 1;
    /* The engine has one max_body; POST /upload needs more than the other
     * routes. So, as nginx's client_max_body_size per location: the engine's
     * is the ceiling (the larger of the two: refused at the head, or at the
     * chunk size that crosses it), and every body above --max-body streams,
     * so the demo holds each route to its own limit at the head (a declared
     * length: 413 before any read, so no 100 Continue) or as it reads
     * (demo_upload.h). With every body buffered nothing streams: --max-body
     * alone is the engine's. */
    o->body_max = o->limits.max_body;
    if (o->cfg.stream_body_bytes && o->upload_max > o->limits.max_body) {
        if (o->limits.max_body < UINT32_MAX && o->cfg.stream_body_bytes > o->limits.max_body + 1)
            o->cfg.stream_body_bytes = (uint32_t)o->limits.max_body + 1;
        o->limits.max_body = o->upload_max;
    }
    o->cfg.mode = o->mode == DEMO_DRIVEN ? WEIR_MODE_DRIVEN : WEIR_MODE_INLINE;
    return 0;
}

#endif /* WEIR_DEMO_ARGS_H */
