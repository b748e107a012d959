// The integration tests' fixtures, written once: a tiny blocking HTTP/1.1
// client over 127.0.0.1, an in-process engine on an ephemeral port, and the
// backend every test runs on (WEIR_TEST_BACKEND: a weir_backend_name, epoll
// when unset; scripts/run-tests runs every integration binary once per
// backend; a name no backend has ends the binary with exit status 2).
// Every call is bounded in time.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "weir.h"

namespace testnet {

int64_t now_ms();
void sleep_ms(int ms);

// How many times slower than the plain build this build runs: ThreadSanitizer
// checks every memory access (a 16 MiB answer's memcpy is checked byte for
// byte) and runs 5-15x slower. A bound on a wait that a correct server meets
// long before it (never a timing claim a test makes) is multiplied by it.
#if defined(__SANITIZE_THREAD__)
inline constexpr int kSlowdown = 10;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr int kSlowdown = 10;
#else
inline constexpr int kSlowdown = 1;
#endif
#else
inline constexpr int kSlowdown = 1;
#endif
inline int bound_ms(int ms) { return ms * kSlowdown; }

// A client connection with its own receive buffer (pipelined answers).
struct Client {
    int fd = -1;
    std::string buf;
    Client() = default;
    explicit Client(int f) : fd(f) {}
    Client(Client &&o) noexcept : fd(o.fd), buf(std::move(o.buf)) { o.fd = -1; }
    Client &operator=(Client &&o) noexcept;
    ~Client();
    void close();
};

struct Response {
    int status = 0; // 0: no complete response (timeout, close, garbage)
    std::string head; // status line and fields, CRLFs included
    std::string body;
    std::string header(const char *name) const; // first value, "" when absent
};

// Connects to port on 127.0.0.1 (blocking, with a 5 s receive timeout); a
// rcvbuf > 0 is set as SO_RCVBUF before the handshake (the window it offers).
Client connect_to(uint16_t port, int rcvbuf = 0);
// Sends everything; false on error.
bool send_all(Client &c, const std::string &bytes);
// Takes one complete response out of c.buf without reading (status 0 when
// c.buf does not hold one yet). Content-Length framing only.
Response take_response(Client &c);
// Reads what is there without blocking, appending to c.buf; false on EOF/error.
bool read_some(Client &c);
// Reads one response (Content-Length or chunked framing) within timeout_ms.
Response read_response(Client &c, int timeout_ms = 5000);
// True when the peer closed (EOF or reset) within timeout_ms; bytes that
// arrive first are appended to c.buf.
bool wait_closed(Client &c, int timeout_ms = 5000);
// True when nothing (no byte, no close) arrives within ms.
bool stays_silent(Client &c, int ms);

// What a slow reader saw: the bytes, then how it ended.
struct Seen {
    std::string data; // the response(s) as received, heads included
    int end = -1;     // 0 EOF, else the errno (ETIMEDOUT: neither within the bound)
    // The first head's length plus its Content-Length: what a whole answer is.
    size_t full() const;
};
// Reads fd slowly (4 KiB a millisecond, so the server's output backs up)
// until EOF, an error, or timeout_ms: how a lingering close is told from a
// reset (docs/engine.md).
Seen read_slowly(int fd, int timeout_ms = 10000);
// "GET path HTTP/1.1\r\nHost: t\r\n\r\n" plus extra header lines (each "Name: v\r\n").
std::string get(const std::string &path, const std::string &extra = "");

// WEIR_BACKEND_* named by WEIR_TEST_BACKEND ("epoll" when unset or empty), and its name.
uint32_t test_backend();
const char *test_backend_name();

// weir_engine_create, except that a backend this kernel refuses
// (WEIR_E_UNAVAILABLE) skips the test, with the reason printed.
int create(const weir_config &cfg, weir_engine **out);

// The port e's listeners are bound to (weir_engine_addr): 0 or its error.
int engine_port(weir_engine *e, uint16_t *port);

// An engine bound to an ephemeral port on 127.0.0.1.
struct Server {
    weir_engine *e = nullptr;
    uint16_t port = 0;
    // Creates, listens and (inline mode) starts. Returns 0 or an error code;
    // a backend this kernel refuses (WEIR_E_UNAVAILABLE) skips the test.
    int start(const weir_config &cfg);
    weir_metrics metrics() const;
    // Waits up to ms for closes[reason] to reach want; returns what it reached.
    uint64_t wait_closes(uint32_t reason, uint64_t want, int ms = 5000) const;
    int shutdown(int64_t grace_ns);
    ~Server();
};

// weir_config_init plus 127.0.0.1, the test backend and the given mode/handler.
weir_config config(uint32_t workers, uint32_t mode, weir_handler_fn fn, void *user);

// A weir_str_t view as std::string.
std::string str(weir_str_t s);
// The query parameter name=... as an integer, or def.
long query_int(const weir_request *r, const char *name, long def);
// Answers ex with status and a text body.
int answer(weir_exchange *ex, int status, const std::string &body, uint32_t flags = 0);

} // namespace testnet
