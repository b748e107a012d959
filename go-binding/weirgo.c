#include "weirgo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { STACK_HEADERS = 32 };

// Set on a thread that drives an inline worker (weirgo_cycle's mark), cleared
// when its goroutine lets it go (weirgo_leave). Go locks an inline worker's
// goroutine to its thread, so no other goroutine runs there while it is set.
// An async worker is not locked and never sets it.
static __thread int on_worker;

// The worker whose turn this thread holds (weir_worker_own 1, or a poll), as
// far as the binding gave or took it: weirgo_owned reads it for the tests.
static __thread weir_worker *owned;

int weirgo_on_worker(void) { return on_worker; }

weir_worker *weirgo_owned(void) { return owned; }

// mode: 0 the whole entry, 1 none of it, 2 the flag without weir's turn.
// The last two are handoff_test's negative arms; nothing else sets them.
static int enter_mode;

void weirgo_test_enter_mode(int mode) { __atomic_store_n(&enter_mode, mode, __ATOMIC_RELAXED); }

void weirgo_enter(weir_worker *w) {
    int mode = __atomic_load_n(&enter_mode, __ATOMIC_RELAXED);
    if (mode == 1) return;
    on_worker = 1;
    if (mode == 2) return;
    weir_worker_own(w, 1);
    owned = w;
}

static int leave_keeps_turn; // handoff_test's negative arm: the leave of old, flag only

void weirgo_test_leave_keeps_turn(int on) { __atomic_store_n(&leave_keeps_turn, on, __ATOMIC_RELAXED); }

void weirgo_leave(weir_worker *w) {
    on_worker = 0;
    if (__atomic_load_n(&leave_keeps_turn, __ATOMIC_RELAXED)) return;
    weir_worker_own(w, 0);
    if (owned == w) owned = NULL;
}

// Decodes nhdr records of [u32 name_len][u32 value_len][name][value] into h.
static void decode_headers(const char *p, uint32_t nhdr, weir_header_t *h) {
    for (uint32_t i = 0; i < nhdr; i++) {
        uint32_t nl, vl;
        memcpy(&nl, p, 4);
        memcpy(&vl, p + 4, 4);
        p += 8;
        h[i].name.ptr = p;
        h[i].name.len = nl;
        p += nl;
        h[i].value.ptr = p;
        h[i].value.len = vl;
        p += vl;
    }
}

// The encoded headers as weir_header_t: decoded into stack when they fit,
// else into a malloc'd array (give it back with headers_free); NULL when
// there is no memory for one.
static weir_header_t *headers_in(const char *hdrs, uint32_t nhdr, weir_header_t stack[STACK_HEADERS]) {
    weir_header_t *h = stack;
    if (nhdr > STACK_HEADERS) {
        h = (weir_header_t *)malloc(sizeof(weir_header_t) * nhdr);
        if (h == NULL) return NULL;
    }
    decode_headers(hdrs, nhdr, h);
    return h;
}

static void headers_free(weir_header_t *h, const weir_header_t *stack) {
    if (h != stack) free(h);
}

static int respond_encoded(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr, const void *body,
                           size_t body_len, uint32_t flags) {
    weir_header_t stack[STACK_HEADERS];
    weir_header_t *h = headers_in(hdrs, nhdr, stack);
    int rc = -ENOMEM;
    if (h != NULL) {
        rc = weir_respond(ex, status, nhdr ? h : NULL, nhdr, body_len ? body : NULL, body_len, flags);
        headers_free(h, stack);
    }
    if (rc != -EINVAL && rc != -ENOMEM) return rc;
    // An exchange weir refused stays open; answer it so the connection moves on.
    weir_respond(ex, 500, NULL, 0, NULL, 0, WEIR_RESPOND_CLOSE);
    return rc;
}

int weirgo_respond(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr, const void *body,
                   size_t body_len, uint32_t flags) {
    return respond_encoded(ex, status, hdrs, nhdr, body, body_len, flags);
}

int weirgo_upgrade_raw(weir_exchange *ex) { return weir_upgrade_raw(ex); }

int weirgo_respond_interim(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr) {
    weir_header_t stack[STACK_HEADERS];
    weir_header_t *h = headers_in(hdrs, nhdr, stack);
    if (h == NULL) return -ENOMEM;
    int rc = weir_respond_interim(ex, status, nhdr ? h : NULL, nhdr);
    headers_free(h, stack);
    return rc;
}

int weirgo_stream_end(weir_exchange *ex, const char *hdrs, uint32_t nhdr) {
    weir_header_t stack[STACK_HEADERS];
    weir_header_t *h = headers_in(hdrs, nhdr, stack);
    if (h == NULL) return -ENOMEM;
    int rc = weir_stream_end(ex, nhdr ? h : NULL, nhdr);
    headers_free(h, stack);
    return rc;
}

int weirgo_respond_file(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr, int fd, uint64_t offset,
                        uint64_t length, uint32_t flags) {
    weir_header_t stack[STACK_HEADERS];
    weir_header_t *h = headers_in(hdrs, nhdr, stack);
    if (h == NULL) return -ENOMEM; // not consumed: the caller answers otherwise
    int rc = weir_respond_file(ex, status, nhdr ? h : NULL, nhdr, fd, offset, length, flags);
    headers_free(h, stack);
    return rc;
}

int weirgo_serve_file(weir_exchange *ex, int fd, const char *hdrs, uint32_t nhdr, const char *ctype,
                      const char *name, size_t name_len, uint32_t file_flags, uint32_t respond_flags) {
    weir_header_t stack[STACK_HEADERS];
    weir_header_t *h = headers_in(hdrs, nhdr, stack);
    // Not weir's -ENOMEM, which consumes the exchange: this one leaves it
    // as it was, for the caller to answer otherwise.
    if (h == NULL) return -EAGAIN;
    weir_file_options o;
    weir_file_options_init(&o);
    o.flags = file_flags;
    o.content_type = ctype != NULL ? ctype : weir_content_type(name, name_len);
    o.headers = nhdr ? h : NULL;
    o.num_headers = nhdr;
    o.respond_flags = respond_flags;
    int rc = weir_serve_file(ex, fd, &o);
    headers_free(h, stack);
    return rc;
}

// Takes an upgraded connection handed back into t; 0 when ex is not one.
static int take_upgraded(weir_exchange *ex, weirgo_taken *t) {
    int fd = -1;
    size_t len = 0;
    int rc = weir_upgrade_take(ex, &fd, NULL, 0, &len);
    char *buf = NULL;
    if (rc == -ENOBUFS) { // early bytes came past the request: room for them
        buf = (char *)malloc(len);
        if (buf == NULL)
            rc = -ENOMEM; // left untaken: the engine closes it when destroyed
        else
            rc = weir_upgrade_take(ex, &fd, buf, len, &len);
    }
    if (rc != 0 && rc != WEIR_E_GONE && rc != -ENOMEM) {
        free(buf);
        return 0; // an ordinary request (WEIR_E_STATE)
    }
    if (rc != 0) {
        free(buf);
        buf = NULL;
        len = 0;
        fd = -1;
    }
    t->rc = rc;
    t->fd = fd;
    t->buf = buf;
    t->len = len;
    return 1;
}

int weirgo_cycle(weir_worker *w, const weirgo_answer *ans, uint32_t nans, const char *arena, int32_t *rcs,
                 weirgo_read *reads, uint32_t nreads, char *rarena, weir_exchange **out,
                 const weir_request **reqs, struct sockaddr_storage *peers, uint32_t max, int timeout_ms,
                 const int32_t *watch, weirgo_taken *taken, int mark) {
    if (mark)
        on_worker = 1;
    else if (nans > 0 || nreads > 0)
        weir_worker_own(w, 1);
    owned = w; // the poll below takes the turn if the line above did not // this cycle's thread gives the answers and reads: at once, not posted (the poll takes the turn anyway)
    for (uint32_t i = 0; i < nans; i++) {
        const weirgo_answer *a = &ans[i];
        rcs[i] = respond_encoded(a->ex, a->status, a->nhdr ? arena + a->hdr_off : NULL, a->nhdr,
                                 a->body_len ? arena + a->body_off : NULL, (size_t)a->body_len, a->flags);
    }
    for (uint32_t i = 0; i < nreads; i++)
        reads[i].rc = weir_body_read(reads[i].ex, rarena + reads[i].off, (size_t)reads[i].cap);
    int n = weir_worker_poll(w, out, max, timeout_ms);
    // Read after the poll: a writer counts its stream (a Hijack its wait)
    // before starting it, so a hand-back in this batch is always seen here.
    int check = watch != NULL && __atomic_load_n(&watch[0], __ATOMIC_ACQUIRE) > 0;
    int hijacks = watch != NULL && __atomic_load_n(&watch[1], __ATOMIC_ACQUIRE) > 0;
    int gone = watch != NULL && watch[2] != 0; // set once, before the workers start
    for (int i = 0; i < n; i++) {
        if (hijacks && take_upgraded(out[i], &taken[i])) {
            reqs[i] = NULL;
            continue;
        }
        int g = gone ? weir_exchange_gone(out[i]) : 0;
        if (g == 2) { // a report: its client went (never a new request)
            reqs[i] = NULL;
            taken[i].rc = 2;
            continue;
        }
        if (gone)
            taken[i].rc = g == 1 ? 3 : 1; // 3: a request whose client has gone already
        if (check && weir_stream_room(out[i]) >= 0) {
            reqs[i] = NULL;
            taken[i].rc = 1;
            continue;
        }
        reqs[i] = weir_exchange_request(out[i]);
        if (peers != NULL) {
            socklen_t len = sizeof(peers[i]);
            if (weir_exchange_peer(out[i], &peers[i], &len) != 0) peers[i].ss_family = AF_UNSPEC;
        }
    }
    // Unlocked (async), this thread may run a handler goroutine next while
    // the worker's goroutine polls from another: no thread is the worker's
    // until that poll, so the handler's answer is posted, never given at once
    // beside the poll.
    if (!mark) {
        weir_worker_own(w, 0);
        owned = NULL;
    }
    return n;
}

int weirgo_stream_start(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr, uint64_t length,
                        uint32_t flags) {
    weir_header_t stack[STACK_HEADERS];
    weir_header_t *h = headers_in(hdrs, nhdr, stack);
    if (h == NULL) return -ENOMEM; // not consumed: the caller answers 500
    int rc = weir_stream_start(ex, status, nhdr ? h : NULL, nhdr, length, flags);
    headers_free(h, stack);
    return rc;
}
