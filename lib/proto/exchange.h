// The vocabulary a connection's protocol and the loop share (docs/DESIGN.md
// §2b): what a session is configured with, the exchange it hands the host,
// the deadline it waits under, the image it leaves as, the counters the loop
// folds. HTTP/1's Conn (lib/conn/) and HTTP/2's H2Session (lib/h2/) speak
// it; the loop names nothing else of theirs (tests/scripts/layers.sh).
// The Conn prefix is the connection's, not HTTP/1's class.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "weir.h"

namespace weir {

struct ConnSettings {
    weir_http1_limits limits;       // parser limits, max_body included; resolved (http1::limits_resolve)
    uint32_t read_buffer_size = 16384; // pooled block size; larger heads/bodies grow a private buffer
    uint32_t max_pipeline = 64;     // requests parsed ahead of their answers
    uint32_t max_output_bytes = 4u << 20; // unsent output past this closes (WEIR_CLOSE_OUTPUT_LIMIT)
    uint32_t stream_window = 256u << 10;  // a stream's unsent bytes at most (the loop enforces it)
    // Request bodies of at least this many bytes (and chunked ones, and
    // those that expect 100-continue) are streamed (conn_body.cc); 0: none.
    uint32_t stream_body_bytes = 0;
    // The PROXY protocol (conn_proxy.cc): the longest v2 header a connection
    // that owes one may send (v1 is 107 bytes at most whatever this says).
    uint32_t proxy_max_bytes = 4096;
    // Which protocols a fresh connection may speak (WEIR_PROTO_*): with
    // WEIR_PROTO_H2C its first bytes are sniffed (conn_sniff.cc) and the
    // session (proto/session.h) turns HTTP/2 on the preface.
    uint32_t protocols = WEIR_PROTO_HTTP1;
    // HTTP/2's own (weir_config.h2_*; resolved: never 0).
    uint32_t h2_max_streams = 100;
    uint32_t h2_header_table = 4096;
    uint32_t h2_stream_window = 65535;
};

// One request and, later, its answer. Lives inside its Conn's pooled state;
// valid from take_request() until respond() returns, even if the connection
// died in between (the Conn is then a zombie kept for its exchanges).
struct Exchange {
    weir_request req;      // what handlers read
    const void *owner = nullptr; // the session that handed it out (Conn, H2 session)
    uint32_t seq = 0;      // position in the connection's request order
    uint8_t state = 0;     // private to Conn
    uint8_t drop_abort = 0; // the loop's own use: a dropped foreign answer failed for memory
    uint8_t reserved[2] = {};
    void *user = nullptr;  // the loop's own use (the connection's slot)
    uint64_t handle = 0;   // the loop's own use: the host's handle (loop/tickets.h)
    // The loop's own use: a foreign answer to a connection that closed
    // queues the exchange itself for its worker to release, so that release
    // needs no allocation that could fail (Worker::respond).
    Exchange *next_drop = nullptr;
    // The loop's own use: when the host took it or last worked on it (a
    // streamed answer's write, a body read), for sessions whose exchanges
    // meet the handler deadline one by one (Worker::expire_held).
    int64_t host_ms = 0;
};

// A stretch of a file answer's body, in output order after every byte
// output_iov() gave: the port sends it from the file without copying it
// (sendfile, splice). The fd is the Conn's and stays open while lent.
struct FileRange {
    int fd = -1;
    uint64_t off = 0;
    uint64_t len = 0;
};

// What the loop should arm a timer for.
enum class ConnWait : uint8_t {
    FirstByte, // connected, no byte yet (header timeout, counted from the start)
    Idle,      // keep-alive: waiting for the first byte of the next request (idle timeout)
    Head,      // part of a request head has arrived (header timeout, one deadline)
    Body,      // a head is complete, its body is arriving (body timeout, re-armed by reads)
    Handler,   // waiting for the application's answers (no timeout)
    Output,    // output pending and not yet written (write timeout)
    Proxy,     // its PROXY header has not arrived whole (proxy timeout, from the accept)
    Done,      // nothing left to do or write: close now
};

// A connection lifted out of its Conn at a request boundary (detach) to be
// adopted by another worker, engine or backend: everything needed to go on
// serving it as if it had never moved. The loop fills fd and peer. peer is
// the connection's peer as every API sees it: the proxied source once a
// PROXY header was read (a connection that owes its header is at no
// boundary: it moves once the header is read, or closes at its deadline),
// so an adopter never asks for a header again.
struct ConnImage {
    int fd = -1;
    sockaddr_storage peer{};
    socklen_t peer_len = 0;
    uint64_t id = 0;          // 0: a new connection (the adopter numbers it)
    uint64_t requests = 0, responses = 0, parse_errors = 0, continues_sent = 0;
    bool served = false;      // it sent bytes before (keep-alive timing, not first-byte)
    // It had not chosen its protocol (h2c's sniff, conn_sniff.cc): no byte
    // yet, part of HTTP/2's preface, or the preface whole while held (an
    // HTTP/2 session is never moved, so a connection that spoke only the
    // preface moves undecided). The adopter sniffs unread as a new
    // connection's first bytes.
    bool sniff = false;
    char *unread = nullptr;   // bytes read and not yet parsed (malloc'd, owned)
    size_t unread_len = 0;

    ConnImage() = default;
    ConnImage(const ConnImage &) = delete;
    ConnImage &operator=(const ConnImage &) = delete;
    ~ConnImage();
};

// A bit a session's respond takes beside WEIR_RESPOND_*: the loop checked
// the answer already (answer_check, proto/answer_rules.h, on the caller's
// thread, before the claim), so the session does not check it again. Never
// a public flag: weir_respond refuses any bit it does not name.
inline constexpr uint32_t kAnswerChecked = 1u << 31;

// What a session has counted, folded by the loop into its metrics (both
// protocols count these; HTTP/2's own are H2Counters).
struct SessionCounters {
    uint64_t requests = 0;
    uint64_t responses = 0;
    uint64_t parse_errors = 0;
    uint64_t continues_sent = 0;
};

// What became of the connection's PROXY header (conn_proxy.cc): one
// outcome a connection, set once, so the loop counts it by comparing
// one byte rather than folding counters at every settle.
enum class ProxyResult : uint8_t {
    None,      // none owed, or not decided yet
    V1,        // a v1 header gave the peer
    V2,        // a v2 header gave the peer
    V1Local,   // v1 UNKNOWN: the socket's peer stands
    V2Local,   // v2 LOCAL, AF_UNSPEC, AF_UNIX: the socket's peer stands
    Missing,   // refused: no signature
    Malformed, // refused: the spec says no (a CRC32C mismatch included)
    Untrusted, // refused: its source is not in proxy_trusted
    Oversized, // refused: too long
    Timeout,   // not whole by the deadline
};

} // namespace weir
