// The mixed load of the reliability suite (docs/reliability.md, "Leaks" and
// "The soak"): a client, in the test process, that drives many concurrent
// connections over raw non-blocking sockets (one epoll per client thread)
// with every kind of request a server meets, good and bad, and checks every
// answer it reads against what the handler below defines. Both halves live
// here so the answers checked and the answers given cannot drift apart.
//
// A connection is one of two plans:
//   keep-alive: 0-15 steps, each one request or a pipelined burst of 2-16
//     (GET answered at once, GET deferred to the responder thread, POST with
//     a Content-Length or a chunked body echoed at once or deferred, a large
//     answer), sometimes split over several writes; then one ending: the
//     client's FIN, a Connection: close request, an invalid request (400 and
//     the server's FIN, sometimes after a valid pipelined one or with junk
//     behind it), a head cut short, a body cut short, or a reset
//     (SO_LINGER {1,0}) with 1-8 requests in flight;
//   silent (a few per cent, not counted against the concurrency): connects
//     and sends nothing, then gives up after 20-200 ms or waits for the
//     server's silent close (EOF with no byte).
// Every wait is bounded; anything unexpected (status, body, a close or reset
// where an answer or a FIN was due, a timeout) is an error with a note.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "weir.h"

namespace mixed {

// What the driver counts: requests by class, and the two silent classes
// (connections, not requests).
enum Cls : int {
    kGetNow,       // GET answered inside the handler (sometimes a 16-64 KiB body)
    kGetLater,     // GET deferred, answered from the responder thread
    kPostLength,   // POST with a Content-Length body, echoed (at once or deferred)
    kPostChunked,  // POST with a chunked body (trailers sometimes), echoed
    kPipelined,    // requests of a burst of 2-16 in one write, each counted here
    kClose,        // Connection: close: the answer, then the server's FIN
    kInvalid,      // malformed: 400, then the server's FIN
    kAbortHead,    // part of a head, then the client's FIN
    kAbortBody,    // a head and part of its body, then the client's FIN
    kReset,        // requests in flight when the client resets (SO_LINGER {1,0})
    kSilentGiveUp, // connected, sent nothing, the client closed after 20-200 ms
    kSilentWait,   // connected, sent nothing, waited for the server's silent close
    kClasses
};
const char *class_name(int c);
bool is_request(int c); // every class but the two silent ones

// How keep-alive connections ended (the server's close reasons follow these).
enum End : int { kEndFin, kEndClose, kEndInvalid, kEndAbortHead, kEndAbortBody, kEndReset, kEnds };
const char *end_name(int e);

struct Counts {
    uint64_t sent[kClasses] = {};     // started (requests; connections for the silent classes)
    // Answers read and as the handler defined them; for the aborts and the
    // silent classes, connections that went as planned; for kReset, the
    // answers read (and right) before the reset.
    uint64_t verified[kClasses] = {};
    uint64_t errors[kClasses] = {};
    uint64_t ends[kEnds] = {};        // keep-alive connections by their ending
    uint64_t connections = 0;         // connects that succeeded
    uint64_t connect_errors = 0;
    uint64_t bytes_sent = 0, bytes_read = 0;
    uint64_t silent_wait_max_ms = 0;  // the longest a silent connection waited for the server's close
    std::vector<std::string> notes;   // the first errors, described
    // Connects reset before they were seen to complete (SO_ERROR ECONNRESET):
    // (begun, seen) on closerace::now_us's clock, the first 1,000.
    std::vector<std::pair<int64_t, int64_t>> connect_resets;
    uint64_t requests() const;        // every request started, aborted and reset ones included
    uint64_t answers() const;         // answers read and checked
    uint64_t total_errors() const;
    void add(const Counts &o);
    std::string summary() const;      // one line per class, for the test's log
};

struct Options {
    uint16_t port = 0;
    int threads = 1;            // client threads, each with its own epoll and connections
    int concurrency = 64;       // keep-alive connections at once, per thread
    int max_silent = 8;         // silent connections at once, per thread
    uint64_t requests = 0;      // stop starting once this many requests started (0: no bound)
    int64_t seconds = 0;        // ... or after this long (0: no bound)
    const std::atomic<bool> *stop = nullptr; // ... or once this is true
    uint32_t seed = 1;
    int answer_ms = 10000;      // bound on any wait for an answer, a FIN or a connect
    int silent_wait_ms = 10000; // bound on a silent connection's wait for the server's close (~2 s expected)
};

// Runs the mix to its bound on o.threads threads and returns when every
// connection it made is closed and every thread joined.
Counts run(const Options &o);

// The server's half. Paths, and the answers the driver expects:
//   /now/T        200 "N/now/T", inline
//   /big/S/T      200 S bytes of big_body(S), inline
//   /later/T      200 "L/later/T", deferred: weir_defer, then the responder thread
//   /echo/T       200 the request body, inline
//   /echol/T      200 the request body, deferred
// user is ignored.
void handler(void *user, weir_exchange *ex);
std::string big_body(size_t n);
// Prints text through cmocka's print_message a line at a time (its buffer
// holds 1 KiB, a summary or a report more).
void print_lines(const std::string &text);

// Deferred exchanges handed to the responder and not yet answered. An engine
// must not be destroyed before this is 0 (its exchanges would dangle).
uint64_t deferred_pending();
bool wait_deferred_idle(int ms);

} // namespace mixed
