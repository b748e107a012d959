/*
 * weir-demo — the C server `make run` starts: every way of running handlers
 * (inline, driven, deferred), two small apps, and the signals an operator
 * uses. Also the server the benchmarks measure (1 worker, inline, hello).
 *
 *   weir-demo --addr 127.0.0.1:0 --mode driven --app echo
 *
 * --app echo answers {"method","url","version","headers","trailers","body_b64","peer"}
 * as ASCII JSON: bytes >= 0x7f in strings are \u00XX escapes of the byte
 * itself (see demo_json.h), so the echo is lossless for any header bytes.
 *
 * Signals are taken by a signalfd on the main thread, blocked everywhere
 * else (threads inherit the mask), so no engine call ever runs in a signal
 * handler.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "weir.h"

#include "demo_adaptive.h"
#include "demo_args.h"
#include "demo_conn_events.h"
#include "demo_json.h"
#include "demo_metrics.h"
#include "demo_files.h"
#include "demo_handover.h"
#include "demo_stream.h"
#include "demo_systemd.h"
#include "demo_upload.h"
#include "demo_ws.h"

#define SHUTDOWN_GRACE_NS (3 * 1000000000LL)
#define DRIVEN_BATCH 64
#define DEFER_QUEUE 65536 /* power of two */
#define SLOW_MAX_MS 60000

#define VIEW_IS(s, lit) ((s).len == sizeof(lit) - 1 && memcmp((s).ptr, (lit), sizeof(lit) - 1) == 0)

typedef struct demo demo;

typedef struct driver {
    demo *d;
    weir_worker *w;
    pthread_t thread;
} driver;

struct demo {
    demo_opts o;
    weir_engine *e; /* the active engine */
    adaptive ad;    /* --adaptive: the standby, the switch count, the controller */
    demo_handover ho; /* --upgrade-socket, --take-over */

    /* deferred mode: exchanges handed from the loop to the answering pool */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    weir_exchange **queue;
    size_t head, len;
    int stopping;
    pthread_t *pool;
    uint32_t pool_started;

    /* driven mode */
    driver *drivers;
    uint32_t drivers_started;

    int wake[2];        /* a driven thread failed: wakes the main thread */
    atomic_int failed;
};

/* ---------------------------------------------------------------- apps */

static const weir_header_t k_text[] = {{{"Content-Type", 12}, {"text/plain", 10}}};
static const weir_header_t k_json[] = {{{"Content-Type", 12}, {"application/json", 16}}};
static const weir_header_t k_octets[] = {{{"Content-Type", 12}, {"application/octet-stream", 24}}};

/* The ms=N parameter of a query string, 0 when absent or malformed. */
static unsigned query_ms(weir_str_t q) {
    size_t i = 0;
    while (i < q.len) {
        size_t end = i;
        while (end < q.len && q.ptr[end] != '&')
            end++;
        if (end - i > 3 && memcmp(q.ptr + i, "ms=", 3) == 0) {
            unsigned long v = 0;
            for (size_t k = i + 3; k < end; k++) {
                if (q.ptr[k] < '0' || q.ptr[k] > '9')
                    return 0;
                if (v <= SLOW_MAX_MS)
                    v = v * 10 + (unsigned long)(q.ptr[k] - '0');
            }
            return v > SLOW_MAX_MS ? SLOW_MAX_MS : (unsigned)v;
        }
        i = end + 1;
    }
    return 0;
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Static answers only: the benchmarked path allocates nothing. */
static void app_hello(weir_exchange *ex, const weir_request *r) {
    static const char hello[] = "Hello, World!";
    static const char not_found[] = "Not Found\n";
    if (r->path.len >= 7 && memcmp(r->path.ptr, "/files/", 7) == 0) { /* every method: 405 but GET/HEAD */
        weir_str_t name = {r->path.ptr + 7, r->path.len - 7};
        demo_files_answer(ex, name, k_text);
        return;
    }
    if (VIEW_IS(r->method, "GET")) {
        if (VIEW_IS(r->path, "/")) {
            weir_respond(ex, 200, k_text, 1, hello, sizeof hello - 1, 0);
            return;
        }
        if (VIEW_IS(r->path, "/fast")) {
            weir_respond(ex, 200, k_text, 1, "fast\n", 5, 0);
            return;
        }
        if (VIEW_IS(r->path, "/ws")) {
            demo_ws_begin(ex, r, k_text);
            return;
        }
        if (VIEW_IS(r->path, "/stream")) {
            demo_stream_begin(ex, r, k_text);
            return;
        }
        if (VIEW_IS(r->path, "/slow")) {
            char msg[48];
            unsigned ms = query_ms(r->query);
            sleep_ms(ms);
            int n = snprintf(msg, sizeof msg, "slept %u ms\n", ms);
            weir_respond(ex, 200, k_text, 1, msg, (size_t)n, 0);
            return;
        }
    } else if (VIEW_IS(r->method, "POST") && VIEW_IS(r->path, "/echo")) {
        weir_respond(ex, 200, k_octets, 1, r->body.ptr, r->body.len, 0);
        return;
    } else if (VIEW_IS(r->method, "POST") && VIEW_IS(r->path, "/upload")) {
        /* a body weir buffered (below --stream-body-bytes): the same answer */
        demo_sha256 sha;
        char hex[65], msg[96];
        demo_sha256_init(&sha);
        demo_sha256_update(&sha, r->body.ptr, r->body.len);
        demo_sha256_hex(&sha, hex);
        int n = snprintf(msg, sizeof msg, "%zu %s\n", r->body.len, hex);
        weir_respond(ex, 200, k_text, 1, msg, (size_t)n, 0);
        return;
    }
    weir_respond(ex, 404, k_text, 1, not_found, sizeof not_found - 1, 0);
}

static void app_echo(weir_exchange *ex, const weir_request *r) {
    demo_buf b = {0};
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    char peer[INET6_ADDRSTRLEN + 16] = "";
    memset(&ss, 0, sizeof ss);
    if (weir_exchange_peer(ex, &ss, &sl) == 0)
        demo_peer_text(&ss, peer, sizeof peer);
    if (demo_json_request(&b, r, peer) != 0) {
        weir_respond(ex, 500, k_text, 1, "out of memory\n", 14, 0);
        return;
    }
    weir_respond(ex, 200, k_json, 1, b.ptr, b.len, 0);
    demo_buf_free(&b);
}

static demo *g_demo; /* for app_any: the app a collected body goes to */

static void app_any(weir_exchange *ex, const weir_request *r) {
    if (g_demo->o.app == DEMO_APP_ECHO)
        app_echo(ex, r);
    else
        app_hello(ex, r);
}

/* Any thread that holds ex (a streamed body: the worker's thread, which
 * on_request and the driven threads are). weir_respond's result needs no
 * action: GONE means the peer left first, and ex is freed either way. */
static void answer(demo *d, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (r && demo_body_resume(ex, app_any))
        return; /* a body handed back: more of it, its end, or its failure */
    if (r && (r->flags & WEIR_REQ_BODY_STREAM)) {
        demo_body_begin(ex, r, app_any);
        return;
    }
    if (r && demo_stream_resume(ex))
        return; /* a /stream handed back for room, not a request */
    if (!r && demo_ws_take(ex))
        return; /* a /ws connection handed back after its 101 (it has no request any more) */
    if (!r) {
        weir_respond(ex, 500, NULL, 0, NULL, 0, WEIR_RESPOND_CLOSE);
        return;
    }
    if (d->o.app == DEMO_APP_ECHO)
        app_echo(ex, r);
    else
        app_hello(ex, r);
}

/* ------------------------------------------------------- deferred mode */

static int defer_push(demo *d, weir_exchange *ex) {
    pthread_mutex_lock(&d->mu);
    int ok = d->len < DEFER_QUEUE;
    if (ok) {
        d->queue[(d->head + d->len) & (DEFER_QUEUE - 1)] = ex;
        d->len++;
        pthread_cond_signal(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return ok;
}

/* Answers until told to stop and the queue is empty, so no deferred exchange
 * is left unanswered (and unfreed) at exit. */
static void *pool_main(void *arg) {
    demo *d = (demo *)arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->len == 0 && !d->stopping)
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->len == 0)
            break;
        weir_exchange *ex = d->queue[d->head];
        d->head = (d->head + 1) & (DEFER_QUEUE - 1);
        d->len--;
        pthread_mutex_unlock(&d->mu);
        answer(d, ex);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* Inline and deferred modes: the worker's thread. */
static void on_request(void *user, weir_exchange *ex) {
    demo *d = (demo *)user;
    /* Bodies are read on this thread (weir_body_read's rule), so neither a
     * streamed request nor, while bodies are open, a handle that may be one
     * handed back is deferred. */
    const weir_request *r = weir_exchange_request(ex);
    int body = r && ((r->flags & WEIR_REQ_BODY_STREAM) || atomic_load(&g_bodies_open) > 0);
    /* A full queue (or a refused defer) is answered here: slower, never lost. */
    if (d->o.mode == DEMO_DEFERRED && !body && weir_defer(ex) == 0 && defer_push(d, ex))
        return;
    answer(d, ex);
}

/* --------------------------------------------------------- driven mode */

static void *driver_main(void *arg) {
    driver *dr = (driver *)arg;
    weir_exchange *batch[DRIVEN_BATCH];
    for (;;) {
        int n = weir_worker_poll(dr->w, batch, DRIVEN_BATCH, 1000);
        if (n == WEIR_E_SHUTDOWN)
            break;
        if (n < 0) {
            fprintf(stderr, "weir-demo: worker poll: %s\n", weir_strerror(n));
            atomic_store(&dr->d->failed, 1);
            if (write(dr->d->wake[1], "x", 1) < 0) {
                /* the main thread still sees failed on its next wakeup */
            }
            break;
        }
        for (int i = 0; i < n; i++)
            answer(dr->d, batch[i]);
    }
    return NULL;
}

/* ------------------------------------------------------------ control */

static void print_metrics(demo *d) {
    weir_metrics m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    int rc = weir_engine_metrics(d->e, &m);
    if (rc < 0) {
        printf("metrics: %s\n", weir_strerror(rc));
        fflush(stdout);
        return;
    }
    printf("metrics begin\n");
    demo_print_engine_metrics(&m);
    if (d->ad.standby)
        adaptive_print(&d->ad);
    printf("metrics end\n");
    fflush(stdout);
}

/* SIGUSR1 begins a pause (returns at once: the listeners linger, then
 * close); SIGUSR2 resumes. */
static void pause_signal(weir_engine *e, int begin) {
    int rc = begin ? weir_engine_begin_pause(e) : weir_engine_resume(e);
    printf("%s: %s\n", begin ? "pause" : "resume", rc < 0 ? weir_strerror(rc) : "ok");
    fflush(stdout);
}

static int fail(const char *what, int rc) {
    fprintf(stderr, "weir-demo: %s: %s\n", what, weir_strerror(rc));
    return 1;
}

static void print_listening(weir_engine *e, const char *fallback_host) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char ip[INET6_ADDRSTRLEN] = "";
    unsigned port = 0;
    if (weir_engine_addr(e, &ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
            port = ntohs(a->sin6_port);
            printf("listening on [%s]:%u\n", ip, port);
            fflush(stdout);
            return;
        }
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        port = ntohs(a->sin_port);
    }
    printf("listening on %s:%u\n", ip[0] ? ip : fallback_host, port);
    fflush(stdout);
}

/* Starts whatever answers requests in the chosen mode. */
static int start_mode(demo *d) {
    int rc;
    if (d->o.mode == DEMO_DRIVEN) {
        int n = weir_engine_workers(d->e);
        if (n < 0)
            return fail("workers", n);
        d->drivers = (driver *)calloc((size_t)n, sizeof *d->drivers);
        if (!d->drivers)
            return fail("start", -ENOMEM);
        for (int i = 0; i < n; i++) {
            driver *dr = &d->drivers[i];
            dr->d = d;
            if ((rc = weir_engine_worker(d->e, (uint32_t)i, &dr->w)) < 0)
                return fail("worker", rc);
            if ((rc = pthread_create(&dr->thread, NULL, driver_main, dr)) != 0)
                return fail("driver thread", -rc);
            d->drivers_started++;
        }
        return 0;
    }
    if (d->o.mode == DEMO_DEFERRED) {
        d->queue = (weir_exchange **)calloc(DEFER_QUEUE, sizeof *d->queue);
        d->pool = (pthread_t *)calloc(d->o.defer_threads, sizeof *d->pool);
        if (!d->queue || !d->pool)
            return fail("start", -ENOMEM);
        for (uint32_t i = 0; i < d->o.defer_threads; i++) {
            if ((rc = pthread_create(&d->pool[i], NULL, pool_main, d)) != 0)
                return fail("pool thread", -rc);
            d->pool_started++;
        }
    }
    if ((rc = weir_engine_start(d->e)) < 0)
        return fail("start", rc);
    return 0;
}

/* Joins the demo's own threads; the engine must be shut down already. */
static void stop_threads(demo *d) {
    for (uint32_t i = 0; i < d->drivers_started; i++)
        pthread_join(d->drivers[i].thread, NULL);
    pthread_mutex_lock(&d->mu);
    d->stopping = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (uint32_t i = 0; i < d->pool_started; i++)
        pthread_join(d->pool[i], NULL);
    free(d->drivers);
    free(d->pool);
    free(d->queue);
}

/* Waits for signals until TERM/INT (returns 0) or a driver failure (1). */
static int signal_loop(demo *d, int sfd) {
    struct pollfd p[2] = {{sfd, POLLIN, 0}, {d->wake[0], POLLIN, 0}};
    for (;;) {
        if (atomic_load(&d->failed))
            return 1;
        /* With --adaptive-controller the wait ends at the next sample; a
         * handover under way is polled. */
        int ms = adaptive_timeout(&d->ad), hms = handover_timeout(&d->ho);
        if (ms < 0 || (hms >= 0 && hms < ms))
            ms = hms;
        if (poll(p, 2, ms) < 0) {
            if (errno == EINTR)
                continue;
            return fail("poll", -errno);
        }
        adaptive_tick(&d->ad, &d->e);
        if (handover_tick(&d->ho))
            return 0; /* handed over: shut down (nothing is left) and exit */
        if (!(p[0].revents & POLLIN))
            continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
            continue;
        switch (si.ssi_signo) {
        case SIGTERM: demo_systemd_store(d->e, d->o.fdstore, d->o.handover.deadline_ms); return 0; /* --fdstore */
        case SIGINT: return 0;
        case SIGHUP: print_metrics(d); break;
        case SIGWINCH:
            if (d->ad.standby)
                adaptive_switch(&d->ad, &d->e);
            break;
        case SIGUSR1: pause_signal(d->e, 1); break;
        case SIGUSR2: pause_signal(d->e, 0); break;
        case SIGQUIT: handover_offer(&d->ho, d->e, d->o.upgrade_socket, &d->o.handover); break;
        default: break;
        }
    }
}

int main(int argc, char **argv) {
    static demo d; /* large and zeroed; lives as long as the process */
    int rc = demo_parse_args(&d.o, argc, argv);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    d.o.cfg.on_request = on_request;
    d.o.cfg.user = &d;
    if (d.o.conn_events)
        d.o.cfg.on_conn = demo_conn_event;
    g_demo = &d;
    g_body_max = d.o.body_max;
    g_upload_max = d.o.upload_max;
    pthread_mutex_init(&d.mu, NULL);
    pthread_cond_init(&d.cv, NULL);
    atomic_init(&d.failed, 0);

    /* Blocked before any thread exists, so every thread inherits the mask and
     * only the signalfd sees these. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGWINCH);
    sigaddset(&set, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN); /* stdout may be a pipe whose reader left */
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0 || pipe2(d.wake, O_CLOEXEC) != 0)
        return fail("signalfd", -errno);
    if (demo_files_open(d.o.static_dir) != 0)
        return fail("--static", -errno);

    int exit_code = 1;
    char what[96];
    rc = weir_engine_create(&d.o.cfg, &d.e);
    if (rc < 0 && d.o.backend_auto) {
        /* The engine logged why (through the log callback); say what we do. */
        fprintf(stderr, "weir-demo: --backend auto: io_uring: %s; falling back to epoll\n", weir_strerror(rc));
        d.o.cfg.backend = WEIR_BACKEND_EPOLL;
        rc = weir_engine_create(&d.o.cfg, &d.e);
    }
    if (rc < 0) {
        fail("create", rc);
        goto out;
    }
    if (d.o.take_over) {
        if ((rc = weir_handover_take_over(d.e, d.o.take_over, &d.o.handover, &d.ho.taking)) < 0) {
            snprintf(what, sizeof what, "take over %s", d.o.take_over);
            fail(what, rc);
            goto out;
        }
    } else if ((rc = demo_systemd_listen(d.e, d.o.systemd)) < 0) { /* --systemd: what systemd passed, first */
        snprintf(what, sizeof what, "listen %s:%u", d.o.host, d.o.cfg.port);
        fail(what, rc);
        goto out;
    }
    if (start_mode(&d) != 0)
        goto stop;
    if (d.o.adaptive &&
        (rc = adaptive_start(&d.ad, d.e, &d.o.cfg, d.o.controller ? &d.o.controller_cfg : NULL)) < 0) {
        fail("--adaptive standby", rc);
        goto stop;
    }
    print_listening(d.e, d.o.host);

    exit_code = signal_loop(&d, sfd);
stop:
    weir_handover_free(d.ho.offer); /* a signal or failure ended us first: withdrawn */
    weir_handover_free(d.ho.taking);
    weir_adaptive_destroy(d.ad.pair); /* before the engines it watches */
    d.ad.pair = NULL;
    if (d.ad.standby) {
        rc = weir_engine_shutdown(d.ad.standby, SHUTDOWN_GRACE_NS);
        if (rc < 0 && rc != -ETIMEDOUT)
            fail("shutdown (standby)", rc);
    }
    rc = weir_engine_shutdown(d.e, SHUTDOWN_GRACE_NS);
    if (rc == -ETIMEDOUT)
        fprintf(stderr, "weir-demo: shutdown: grace ran out; open exchanges were closed\n");
    else if (rc < 0)
        fail("shutdown", rc);
    stop_threads(&d);
out:
    weir_engine_destroy(d.e);
    weir_engine_destroy(d.ad.standby);
    close(sfd);
    close(d.wake[0]);
    close(d.wake[1]);
    pthread_mutex_destroy(&d.mu);
    pthread_cond_destroy(&d.cv);
    return exit_code;
}
