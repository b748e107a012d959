// Conn's private state, shared by the files that implement it (conn.cc,
// conn_input.cc, conn_pool.cc, conn_image.cc). Not for use outside lib/conn.
#pragma once

#include "conn/conn.h"
#include "conn/out_queue.h"
#include "http1/response.h"
#include "util/bytes.h"

namespace weir {
namespace conn_detail {

enum SlotState : uint8_t {
    kFree,
    kReady,    // parsed, not handed out
    kTaken,    // handed out, not answered
    kAnswered, // answered out of order: waits for earlier answers
    kError,    // weir answers it itself (parse error, 408), then closes
    kDropped,  // handed out, but the connection closed first
    kStreaming, // handed out, its streamed answer begun (conn_stream.cc), not ended
};

// kBodyStream: the head was handed out with its body to come; nothing
// after it is parsed until the host has read it (conn_body.cc).
enum Phase : uint8_t { kHead, kBodyLength, kBodyChunked, kBodyStream };

// A slot's streamed request body.
enum BodyState : uint8_t {
    kBodyNone,   // buffered whole, or none: not for weir_body_read
    kBodyOpen,   // being read
    kBodyDone,   // read to its end
    kBodyFailed, // it cannot end (body_error says why)
};

enum ConnFlag : uint32_t {
    kClosing = 1,    // no more input; close once what is owed is written
    kNoMore = 2,     // parse no further requests (error, or not keep-alive)
    kDead = 4,       // the fd is closed (or the connection was detached)
    kFinal = 8,      // the last answer has been queued
    kAbort = 16,     // close now, drop pending output
    kLentIn = 32,    // read_space() is lent to a reader
    kLentOut = 64,   // output_iov() is lent to a writer
    kHeld = 128,     // parse nothing new: heading for a boundary to detach at
    kGotBytes = 256, // a byte has arrived at some point (not a silent connection)
    kMoreInput = 512, // the closing answer left input behind: the peer sent past it
    kUpgradeWait = 1024, // an Upgrade request waits for its answer: what follows may not be HTTP
    kUpgraded = 2048,    // it was answered 101: the connection leaves at its boundary
    kLentFile = 4096,    // with kLentOut: the lend is a file range (output_file), not bytes
    kProxyWait = 8192,       // its PROXY header is owed: nothing is HTTP yet (conn_proxy.cc)
    kProxyBytes = 16384,     // some of the header came (a timeout answers 408, not silence)
    kProxyUntrusted = 32768, // its source may not send one: refused at its first bytes
    kSniff = 65536,          // HTTP/2 is on: the first bytes may be its preface (conn_sniff.cc)
    kH2Only = 131072,        // with kSniff: h2c only, whatever comes is HTTP/2's to judge
    kWantH2 = 262144,        // the preface came: nothing is parsed, the session turns HTTP/2
    kH2Upgrade = 524288,     // auto: the first request may ask Upgrade: h2c (conn_sniff.cc)
    kWantH2Up = 1048576,     // it did: its head stays unread, the session turns HTTP/2 with it
};

// Bodies need room for their head too; the head is bounded by the parser limits.
constexpr size_t kHeadSlack = 64;

struct ExSlot {
    Exchange x;
    Bytes answer; // an out-of-order answer, kept until its turn
    uint8_t state = kFree;
    bool answer_closes = false;
    // A streamed answer: its framing, the bytes a Length answer still owes,
    // and whether its turn came (pieces then go straight to the output;
    // before it, they wait in answer).
    http1::StreamFraming framing = http1::StreamFraming::None;
    bool stream_direct = false;
    uint64_t stream_left = 0;
    // A file answer (weir_respond_file): the engine's own dup of the host's
    // fd and where the next read starts; the stream is fed from it.
    int file_fd = -1;
    uint64_t file_off = 0;
    // Its body leaves as file ranges the port sends without copying
    // (output_file); false: read into the output (feed_files, the fallback).
    bool file_ranged = false;
    uint32_t answer_reason = 0; // the close reason of a closing answer or an error answer
    // Interim (1xx) answers given before this exchange's turn: the first
    // interim_len bytes of answer, sent when its turn comes (conn_interim.cc)
    // or ahead of its final answer, which is appended after them.
    uint32_t interim_len = 0;
    int error_status = 0;
    uint8_t body = kBodyNone; // BodyState
    int body_error = 0;       // kBodyFailed: what weir_body_read answers
};

} // namespace conn_detail

struct Conn::State {
    State *next_free = nullptr;
    const ConnSettings &cfg;

    // Read buffer: the pooled block, or a private heap buffer while a large
    // head or body needs more room.
    char *block = nullptr;
    char *buf = nullptr;
    size_t cap = 0;
    size_t parse_pos = 0; // start of the next request's head
    size_t end = 0;       // bytes held

    // The request being read.
    conn_detail::Phase phase = conn_detail::kHead;
    bool cont_pending = false; // 100 Continue owed to the request being read
    size_t head_start = 0, head_end = 0;
    size_t raw_pos = 0, data_end = 0; // chunked: next raw byte, end of decoded data
    weir_http1_request head{};
    weir_http1_chunked dec{};
    uint32_t arena_cur = 0; // where the request being read keeps its field views

    // A streamed body (phase kBodyStream; conn_body.cc): whose it is, where
    // its bytes begin (right after its head, whose views must not move),
    // its next raw byte, and the bytes a Length body has still to deliver.
    uint32_t body_seq = 0;
    size_t body_base = 0, body_pos = 0;
    uint64_t body_left = 0;
    bool body_chunked = false;
    bool cont_done = false; // no 100 Continue owed: sent, bytes came first, or none asked
    bool body_wait = false; // the host was told -EAGAIN and waits for bytes

    // Exchanges, a ring indexed by sequence number.
    conn_detail::ExSlot *slots = nullptr;
    uint32_t nslots = 0;
    uint32_t write_seq = 0; // next answer to queue for output
    uint32_t take_seq = 0;  // next request to hand out
    uint32_t parse_seq = 0; // the request being read
    uint32_t taken = 0;     // handed out and unanswered (kTaken + kStreaming + kDropped)
    uint32_t streams = 0;   // kStreaming slots
    // Out-of-order answer buffers an idle state keeps for its next owner:
    // at most kKeptAnswerBytes in all, in slots [0, answers_hi). Per slot
    // instead, 64 slots and 256 cached states could pin 1 GiB a worker.
    static constexpr size_t kKeptAnswerBytes = 64 * 1024;
    uint32_t answers_hi = 0;

    weir_header_t *arena = nullptr;
    uint32_t arena_cap = 0;
    uint32_t arena_pos = 0;

    OutQueue out;
    // The fd of the file range lent to the port (kLentFile): a kernel
    // operation may name it, so a drop leaves it open until the lend returns.
    int file_lent_fd = -1;

    // What this state held when it was cached (ConnPool::give), so take()
    // subtracts what give() added whatever changed between.
    size_t pooled_bytes = 0;

    State(const ConnSettings &c, SegPool &segs) : cfg(c), out(segs) {}
    ~State();
    State(const State &) = delete;
    State &operator=(const State &) = delete;
    // The allocations; false when one failed (the destructor frees the rest).
    bool init();

    conn_detail::ExSlot &slot(uint32_t seq) { return slots[seq % nslots]; }
    const conn_detail::ExSlot &slot(uint32_t seq) const { return slots[seq % nslots]; }
    uint32_t live() const { return parse_seq - write_seq; }
    size_t block_size() const { return cfg.read_buffer_size ? cfg.read_buffer_size : 16384; }
    // Back to a fresh state for the next owner; keeps the allocations.
    void reset();
    // Its allocated bytes as reset() leaves them (the trim's accounting).
    size_t bytes() const;
};

} // namespace weir
