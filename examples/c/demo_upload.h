/* weir-demo's streamed request bodies (cfg.stream_body_bytes; weir-demo
 * streams every body above --max-body, every chunked one and every one that
 * expects 100-continue, unless --stream-body-bytes says otherwise):
 *
 *   POST /upload   reads the body as it arrives (weir_body_read) and answers
 *                  "<bytes> <sha256-hex>\n", up to --upload-max-bytes (4 GiB
 *                  by default, or unlimited; 413 past it): weir holds no
 *                  more than a read buffer of it at a time.
 *   POST /upload?expect=refuse
 *                  answers 417 before reading: a client that sent
 *                  Expect: 100-continue never sends the body.
 *   anything else  whose body streams is collected up to --max-body and then
 *                  answered as if weir had buffered it (413 past that; a
 *                  declared length past it at once, before any read).
 * The engine's max_body is the larger of the two limits (demo_args.h): past
 * it weir refuses the body itself, whatever the route.
 *
 * A read that finds nothing (-EAGAIN) returns; weir hands the exchange back
 * (inline and deferred modes: on_request again, on the worker's thread;
 * driven: in a poll batch), and the table below remembers each body until
 * then. Reads happen on the worker's thread only (weir.h), so deferred mode
 * reads bodies inline. Included once, by weir-demo.c. */
#ifndef DEMO_UPLOAD_H
#define DEMO_UPLOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_sha256.h"
#include "weir.h"

#define DEMO_BODIES 4096

/* How a collected body is answered once whole: the app, given the request
 * with its body filled in. */
typedef void (*demo_app_fn)(weir_exchange *ex, const weir_request *r);

typedef struct demo_body {
    weir_exchange *ex; /* NULL: free */
    int upload;        /* POST /upload: hashed, not kept */
    demo_sha256 sha;
    uint64_t bytes;
    char *buf; /* collected */
    size_t len, cap;
} demo_body;

static demo_body g_bodies[DEMO_BODIES];
static pthread_mutex_t g_bodies_mu = PTHREAD_MUTEX_INITIALIZER;
/* Bodies being read: while 0, no handle can be one handed back. */
static atomic_int g_bodies_open;
static uint64_t g_body_max = 1u << 20; /* --max-body, for collected bodies */
static uint64_t g_upload_max = WEIR_BODY_UNLIMITED; /* --upload-max-bytes, for POST /upload */

static const weir_header_t k_body_text[] = {{{"Content-Type", 12}, {"text/plain", 10}}};

static demo_body *demo_body_find(weir_exchange *ex) {
    for (int i = 0; i < DEMO_BODIES; i++)
        if (g_bodies[i].ex == ex)
            return &g_bodies[i];
    return NULL;
}

static void demo_body_over(demo_body *b) {
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
    pthread_mutex_lock(&g_bodies_mu);
    b->ex = NULL;
    pthread_mutex_unlock(&g_bodies_mu);
    atomic_fetch_sub(&g_bodies_open, 1);
}

static void demo_body_fail(demo_body *b, int status, const char *msg) {
    weir_respond(b->ex, status, k_body_text, 1, msg, strlen(msg), 0);
    demo_body_over(b);
}

/* Reads until the body ends (then answers), fails, or has nothing more now.
 * One reader per body at a time: the hand-back guarantees it. */
static void demo_body_pump(demo_body *b, demo_app_fn app) {
    static _Thread_local char chunk[65536];
    for (;;) {
        int64_t n = weir_body_read(b->ex, chunk, sizeof chunk);
        if (n > 0) {
            if (b->upload) {
                if (b->bytes + (uint64_t)n > g_upload_max) {
                    demo_body_fail(b, 413, "upload too large\n"); /* unread rest: weir closes after it */
                    return;
                }
                demo_sha256_update(&b->sha, chunk, (size_t)n);
                b->bytes += (uint64_t)n;
                continue;
            }
            if (b->len + (size_t)n > g_body_max) {
                demo_body_fail(b, 413, "body too large\n"); /* unread rest: weir closes after it */
                return;
            }
            if (b->len + (size_t)n > b->cap) {
                size_t cap = b->cap ? b->cap * 2 : 65536;
                while (cap < b->len + (size_t)n)
                    cap *= 2;
                char *p = (char *)realloc(b->buf, cap);
                if (!p) {
                    demo_body_fail(b, 500, "out of memory\n");
                    return;
                }
                b->buf = p;
                b->cap = cap;
            }
            memcpy(b->buf + b->len, chunk, (size_t)n);
            b->len += (size_t)n;
            continue;
        }
        if (n == -EAGAIN)
            return; /* handed back when there is more */
        if (n == WEIR_E_GONE || n == WEIR_E_BODY_TOO_LARGE) {
            /* the connection died, or a chunk crossed the engine's max_body
             * (weir answered 413 itself): nothing to answer */
            demo_body_over(b);
            return;
        }
        if (n < 0) {
            /* -ETIMEDOUT, -ECONNABORTED, or a chunked body's parse error */
            int st = n == -ETIMEDOUT ? 408 : weir_http1_status((int)n);
            demo_body_fail(b, st ? st : 400, "body failed\n");
            return;
        }
        if (b->upload) {
            char hex[65], msg[96];
            demo_sha256_hex(&b->sha, hex);
            int len = snprintf(msg, sizeof msg, "%llu %s\n", (unsigned long long)b->bytes, hex);
            weir_respond(b->ex, 200, k_body_text, 1, msg, (size_t)len, 0);
        } else {
            weir_request r = *weir_exchange_request(b->ex);
            r.body.ptr = b->buf ? b->buf : "";
            r.body.len = b->len;
            app(b->ex, &r);
        }
        demo_body_over(b);
        return;
    }
}

/* A request with WEIR_REQ_BODY_STREAM, on the worker's thread. */
static void demo_body_begin(weir_exchange *ex, const weir_request *r, demo_app_fn app) {
    int upload = r->path.len == 7 && memcmp(r->path.ptr, "/upload", 7) == 0 && r->method.len == 4 &&
                 memcmp(r->method.ptr, "POST", 4) == 0;
    if (upload && r->query.len == 13 && memcmp(r->query.ptr, "expect=refuse", 13) == 0) {
        weir_respond(ex, 417, k_body_text, 1, "refused before reading\n", 23, 0);
        return;
    }
    /* Each route's own limit on a declared length, before any read: the
     * client that waits for a 100 Continue never sends the body. */
    uint64_t max = upload ? g_upload_max : g_body_max;
    if (r->body_length != WEIR_LENGTH_UNKNOWN && r->body_length > max) {
        weir_respond(ex, 413, k_body_text, 1, "body too large\n", 15, 0);
        return;
    }
    pthread_mutex_lock(&g_bodies_mu);
    demo_body *b = demo_body_find(NULL);
    if (b) {
        b->ex = ex;
        b->upload = upload;
        b->bytes = 0;
        b->len = 0;
        demo_sha256_init(&b->sha);
        atomic_fetch_add(&g_bodies_open, 1);
    }
    pthread_mutex_unlock(&g_bodies_mu);
    if (!b) {
        weir_respond(ex, 503, k_body_text, 1, "too many bodies\n", 16, 0);
        return;
    }
    demo_body_pump(b, app);
}

/* A handle weir handed back: 1 if it was a body of ours (read on), else 0. */
static int demo_body_resume(weir_exchange *ex, demo_app_fn app) {
    if (atomic_load(&g_bodies_open) == 0)
        return 0;
    pthread_mutex_lock(&g_bodies_mu);
    demo_body *b = demo_body_find(ex);
    pthread_mutex_unlock(&g_bodies_mu);
    if (!b)
        return 0;
    demo_body_pump(b, app);
    return 1;
}

#endif
