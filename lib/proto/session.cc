// The session's change of protocol: HTTP/1's Conn saw HTTP/2's preface (or,
// h2c only, any first bytes), so the connection is HTTP/2's from here on.
#include "proto/session.h"

#include <new>

namespace weir {

void Session::destroy() {
    if (proto_ == Proto::Http1)
        h1().~Conn();
    else
        delete &h2();
}

// A connection held for a move (a transplant, the switch, a hot upgrade)
// whose HTTP/2 preface arrives stays undecided: it moves by image with the
// preface unread and its adopter sniffs it (ConnImage::sniff), where an
// HTTP/2 session made here could only be drained by GOAWAY. That drain
// lost requests: a client's fresh dial that reached the old engine during
// the move was closed before it had written its first request, and Go's
// x/net fails a request whose connection closed before its first stream
// ("client conn could not be established") rather than retry it
// (tests/scripts/h2_handover.sh; docs/http2.md). An Upgrade: h2c
// request is a request (its answer is stream 1): it turns here and drains.
void Session::maybe_turn_h2() {
    Conn &c = h1();
    if (c.held() && c.h2_upgrade() == 0 && !hooks().drain_held_preface) [[unlikely]]
        return; // moves undecided (Conn::lift sets the image's sniff)
    turn_h2();
}

Session::Hooks &Session::hooks() {
    static Hooks h;
    return h;
}

void Session::turn_h2() {
    Conn &c = h1();
    H2Settings hs;
    hs.max_concurrent_streams = settings_.h2_max_streams;
    hs.header_table = settings_.h2_header_table;
    hs.stream_window = settings_.h2_stream_window;
    auto *h2 = new (std::nothrow) H2Session(settings_, hs, pool_, c.id());
    size_t up = c.h2_upgrade(); // an Upgrade: h2c request's head, or 0
    ConnImage img; // the bytes read so far, from the preface (or that head) on
    if (!h2 || !c.detach(img)) {
        delete h2;
        c.close(WEIR_CLOSE_RESOURCE);
        return;
    }
    proxy_result_ = c.proxy_result();
    bool held = c.held(); // a transplant or hot upgrade began before it spoke
    c.~Conn();
    *reinterpret_cast<H2Session **>(mem_) = h2;
    proto_ = Proto::Http2;
    size_t off = 0;
    if (up) {
        if (!h2->upgrade_h1(img.unread, up))
            return;
        off = up;
    }
    while (off < img.unread_len) {
        size_t k = h2->take_bytes(img.unread + off, img.unread_len - off);
        if (k == 0)
            break;
        off += k;
    }
    if (held) // an HTTP/2 connection moves by draining: the client reconnects to the new engine
        h2->hold();
    if (off < img.unread_len && !h2->wants_close()) // it takes all it is given unless it stopped reading
        h2->close(WEIR_CLOSE_RESOURCE);
}

} // namespace weir
