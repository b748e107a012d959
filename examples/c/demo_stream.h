/* weir-demo's GET /stream?n=N&size=S: N pieces of S bytes, streamed
 * (weir_stream_*), chunked for HTTP/1.1. A piece refused for room (-EAGAIN)
 * is written again when weir hands the stream back (inline: on_request;
 * driven: a poll batch); the table below remembers each stream until then.
 * Piece i is S bytes of the letter 'a' + i % 26, so a client can check order.
 * Included once, by weir-demo.c. */
#ifndef DEMO_STREAM_H
#define DEMO_STREAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "weir.h"

#define DEMO_STREAMS 4096
#define DEMO_STREAM_MAX_N 10000000ul
#define DEMO_STREAM_MAX_SIZE 65536ul /* within the default stream window */

typedef struct demo_stream {
    weir_exchange *ex; /* NULL: free */
    unsigned long next, n, size;
} demo_stream;

static demo_stream g_streams[DEMO_STREAMS];
static pthread_mutex_t g_streams_mu = PTHREAD_MUTEX_INITIALIZER;
/* Streams begun and not over: while 0, no handle can be a stream handed
 * back, so the request path asks weir nothing more. */
static atomic_int g_streams_open;

/* The value of name=digits in a query string, or def. */
static unsigned long demo_query_ul(weir_str_t q, const char *name, unsigned long def, unsigned long max) {
    size_t nl = strlen(name), i = 0;
    while (i < q.len) {
        size_t end = i;
        while (end < q.len && q.ptr[end] != '&')
            end++;
        if (end - i > nl && memcmp(q.ptr + i, name, nl) == 0 && q.ptr[i + nl] == '=') {
            unsigned long v = 0;
            for (size_t k = i + nl + 1; k < end; k++) {
                if (q.ptr[k] < '0' || q.ptr[k] > '9')
                    return def;
                if (v <= max)
                    v = v * 10 + (unsigned long)(q.ptr[k] - '0');
            }
            return v > max ? max : v;
        }
        i = end + 1;
    }
    return def;
}

static demo_stream *demo_stream_find(weir_exchange *ex) {
    for (int i = 0; i < DEMO_STREAMS; i++)
        if (g_streams[i].ex == ex)
            return &g_streams[i];
    return NULL;
}

static void demo_stream_over(demo_stream *s) {
    pthread_mutex_lock(&g_streams_mu);
    s->ex = NULL;
    pthread_mutex_unlock(&g_streams_mu);
    atomic_fetch_sub(&g_streams_open, 1);
}

/* Writes until done (then ends) or refused for room. The caller holds ex; one
 * writer per stream at a time (weir.h), which the hand-back guarantees. */
static void demo_stream_pump(demo_stream *s) {
    static _Thread_local char piece[DEMO_STREAM_MAX_SIZE]; /* weir copies it before the call returns */
    for (;;) {
        pthread_mutex_lock(&g_streams_mu);
        weir_exchange *ex = s->ex;
        unsigned long next = s->next, n = s->n, size = s->size;
        pthread_mutex_unlock(&g_streams_mu);
        if (next == n) {
            weir_stream_end(ex, NULL, 0); /* GONE: the client left; either way it is over */
            demo_stream_over(s);
            return;
        }
        memset(piece, 'a' + (int)(next % 26), size);
        int rc = weir_stream_write(ex, piece, size);
        if (rc == -EAGAIN)
            return; /* handed back once there is room */
        if (rc < 0) { /* GONE or -ENOMEM consumed it; STALE: it was over */
            demo_stream_over(s);
            return;
        }
        pthread_mutex_lock(&g_streams_mu);
        s->next = next + 1;
        pthread_mutex_unlock(&g_streams_mu);
    }
}

/* GET /stream: starts the stream, or answers 503 when the table is full. */
static void demo_stream_begin(weir_exchange *ex, const weir_request *r, const weir_header_t *ct) {
    unsigned long n = demo_query_ul(r->query, "n", 10, DEMO_STREAM_MAX_N);
    unsigned long size = demo_query_ul(r->query, "size", 64, DEMO_STREAM_MAX_SIZE);
    if (size == 0)
        size = 1;
    pthread_mutex_lock(&g_streams_mu);
    demo_stream *s = demo_stream_find(NULL);
    if (s) {
        s->ex = ex;
        s->next = 0;
        s->n = n;
        s->size = size;
        atomic_fetch_add(&g_streams_open, 1);
    }
    pthread_mutex_unlock(&g_streams_mu);
    if (!s) {
        weir_respond(ex, 503, ct, 1, "too many streams\n", 17, 0);
        return;
    }
    if (weir_stream_start(ex, 200, ct, 1, WEIR_LENGTH_UNKNOWN, 0) != 0) {
        demo_stream_over(s);
        weir_respond(ex, 500, ct, 1, "stream refused\n", 15, WEIR_RESPOND_CLOSE);
        return;
    }
    demo_stream_pump(s);
}

/* A handle weir handed back: 1 if it was one of ours (pumped), else 0. */
static int demo_stream_resume(weir_exchange *ex) {
    if (atomic_load(&g_streams_open) == 0 || weir_stream_room(ex) < 0)
        return 0;
    pthread_mutex_lock(&g_streams_mu);
    demo_stream *s = demo_stream_find(ex);
    pthread_mutex_unlock(&g_streams_mu);
    if (s)
        demo_stream_pump(s);
    return 1;
}

#endif
