// Many clients at once, for the exhaustion tests (tests/reliability/):
// non-blocking connects (a full backlog must not block the test), one
// request each, and a poll(2) pump over all of them that collects answers
// and closes. Every call is bounded in time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/net.h"

namespace testnet {

struct Crowd {
    struct Peer {
        Client c;
        bool connected = false; // the handshake completed
        bool answered = false;  // a complete response arrived
        bool closed = false;    // EOF or reset seen
        int err = 0;            // what closed it: 0 EOF, else the errno (ECONNRESET, a failed connect's)
        int status = 0;
        std::string body; // the answer's
        int64_t sent_ms = 0, answered_ms = 0;
    };
    std::vector<Peer> peers;

    // Starts n connects to 127.0.0.1:port and waits up to ms for them to
    // complete; returns how many did. Peers whose connect is still in
    // progress (a SYN the kernel dropped: the backlog overflowed) stay
    // unconnected, and a later pump() completes them.
    int connect_all(uint16_t port, int n, int ms);
    // Sends req on every connected peer that has not sent yet, each whole
    // (waiting for room while the server reads), within ms in all; returns
    // how many took it all.
    int send_all(const std::string &req, int ms = 5000);
    // Polls every open peer until quiet_ms pass with nothing new, or ms in
    // all: bytes are appended, complete responses (Content-Length framing)
    // mark answered, EOF/reset marks closed. close_answered: a peer is closed
    // by the test as soon as its answer is complete (its server side frees).
    void pump(int ms, int quiet_ms, bool close_answered = false, const std::string *req = nullptr);
    int count_connected() const;
    int count_answered() const;
    int count_closed_unanswered() const;
    // Closes the peers that were answered (the server's descriptors free).
    int close_answered();
};

} // namespace testnet
