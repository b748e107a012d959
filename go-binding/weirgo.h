// C helpers of the Go binding: each turns one batch of work into one cgo
// crossing. Only C calls weir here; weir never calls back into Go.
#ifndef WEIRGO_H
#define WEIRGO_H

#include <stdint.h>
#include <sys/socket.h>

#include <weir.h>

// One answer queued by an inline handler. Its headers and body live in the
// worker's arena (Go memory holding no pointers): headers at hdr_off as
// nhdr records of [u32 name_len][u32 value_len][name][value].
typedef struct weirgo_answer {
    weir_exchange *ex;
    int32_t status;
    uint32_t flags;
    uint32_t nhdr;
    uint32_t hdr_off;
    uint64_t body_off;
    uint64_t body_len;
} weirgo_answer;

// An upgraded connection a poll handed back (a Hijack's), taken in the cycle
// on the polling thread: rc is weir_upgrade_take's (0: fd and the early bytes,
// buf[0, len) malloc'd for the Go side to copy and free; WEIR_E_GONE: it died
// first). rc 1: not a hand-back (a stream's wake-up).
typedef struct weirgo_taken {
    int32_t rc;
    int32_t fd;
    char *buf;
    uint64_t len;
} weirgo_taken;

// One read of a streamed request body (weir_body_read) for the cycle to run:
// up to cap bytes into the read arena at off; rc gets weir_body_read's result.
typedef struct weirgo_read {
    weir_exchange *ex;
    uint64_t off;
    uint64_t cap;
    int64_t rc;
} weirgo_read;

// Sends every queued answer (rcs[i] gets weir_respond's result), then polls w
// and fills out[i] with the exchanges and reqs[i] with their requests (and
// peers[i] with their addresses when peers is not NULL). watch (may be NULL)
// is three counters the Go side keeps: watch[0] open streamed answers,
// watch[1] Hijacks waiting for their connection, watch[2] 1 when the engine
// reports gone clients (report_gone): each exchange is then asked
// weir_exchange_gone, a report (2) gets reqs[i] NULL and taken[i].rc 2, and
// a request gets taken[i].rc 3 when its client has gone already, else 1.
// While watch[1] is above 0,
// an exchange that is an upgraded connection handed back is taken here
// (taken[i], reqs[i] NULL); while watch[0] is, one that is a stream handed
// back for room (weir_stream_room >= 0) gets reqs[i] NULL and taken[i].rc 1:
// a wake-up for its writer, not a request. mark 1 (inline mode: the handlers
// run next on this thread) marks the thread as the worker's for
// weirgo_on_worker; async mode's unlocked worker passes 0. Between the answers
// and the poll it runs the nreads body reads (reads[i].rc gets each result;
// the bytes land in rarena), on the worker's thread as weir_body_read needs.
// Returns poll's result.
int weirgo_cycle(weir_worker *w, const weirgo_answer *ans, uint32_t nans, const char *arena, int32_t *rcs,
                 weirgo_read *reads, uint32_t nreads, char *rarena, weir_exchange **out,
                 const weir_request **reqs, struct sockaddr_storage *peers, uint32_t max, int timeout_ms,
                 const int32_t *watch, weirgo_taken *taken, int mark);

// Starts a streamed answer (headers encoded as in weirgo_answer); length is
// WEIR_LENGTH_UNKNOWN for chunked. Returns weir_stream_start's result.
// weirgo_on_worker: 1 on a thread that drives a worker (its goroutine is
// the worker's, which must never wait for room its own next poll reports);
// weirgo_enter(w), on the locked thread of a goroutine that starts driving
// an inline worker (the first, one after a hand-off or a Goexit), sets it and
// takes w's turn (weir_worker_own 1) before any handler runs there: the rest
// of a batch a hand-off left is served before this driver's first poll.
// weirgo_leave(w) clears it and gives the turn up (weir_worker_own 0) before
// that goroutine unlocks its thread, which may then run any goroutine: none
// of them may answer at once beside the next driver's poll.
// weirgo_owned: the worker whose turn this thread holds as the binding gave
// it (tests); weirgo_test_*: the tests' switches for the negative arms.
int weirgo_on_worker(void);
void weirgo_enter(weir_worker *w);
void weirgo_leave(weir_worker *w);
weir_worker *weirgo_owned(void);
void weirgo_test_enter_mode(int mode);
void weirgo_test_leave_keeps_turn(int on);

int weirgo_stream_start(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr, uint64_t length,
                        uint32_t flags);

// Answers one exchange now (headers encoded as in weirgo_answer). An answer
// weir refuses (-EINVAL, -ENOMEM) is replaced by a bare 500 that closes, so no
// exchange is ever left unanswered; the original code is still returned.
int weirgo_respond(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr, const void *body,
                   size_t body_len, uint32_t flags);

// weir_respond_file with headers encoded as in weirgo_answer. A refusal
// (-EBADF, -EINVAL) leaves ex as it was, for the caller to answer otherwise.
int weirgo_respond_file(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr, int fd, uint64_t offset,
                        uint64_t length, uint32_t flags);

// weir_serve_file (ServeFile): the request evaluated against fd's validators
// and answered 200/206/304/412/416/405, the headers (encoded as in
// weirgo_answer) going on 200/206/304. ctype is the Content-Type (NUL-ended);
// NULL takes weir_content_type(name, name_len). Returns weir_serve_file's
// result: the status answered (> 0, consumed) or a negative code; -EAGAIN
// when the fields could not be decoded (no memory: nothing was done).
int weirgo_serve_file(weir_exchange *ex, int fd, const char *hdrs, uint32_t nhdr, const char *ctype,
                      const char *name, size_t name_len, uint32_t file_flags, uint32_t respond_flags);

// weir_respond_interim (a 1xx: net/http's WriteHeader(103)) and weir_stream_end
// with trailer fields, headers encoded as in weirgo_answer. Return weir's result
// (-ENOMEM when the fields could not be decoded: nothing was done).
int weirgo_respond_interim(weir_exchange *ex, int status, const char *hdrs, uint32_t nhdr);
int weirgo_stream_end(weir_exchange *ex, const char *hdrs, uint32_t nhdr);

// weir_upgrade_raw (a Hijack). Any thread, as weir_respond.
int weirgo_upgrade_raw(weir_exchange *ex);

// Native pause entry points are not in libweir yet: the binding reports them
// unsupported (see pause.go).

#endif
