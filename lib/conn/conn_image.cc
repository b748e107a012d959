// Conn, moving: holding a connection at its next request boundary, lifting
// it out as an image, and taking one over (DESIGN.md §6).
#include <cstdlib>
#include <cstring>

#include "conn/conn_state.h"

namespace weir {

using namespace conn_detail;

void Conn::hold() { flags_ |= kHeld; }

void Conn::unhold() {
    if (!(flags_ & kHeld))
        return;
    flags_ &= static_cast<uint16_t>(~kHeld);
    if (st_ && !(flags_ & kDead))
        parse();
}

bool Conn::detachable() const {
    if (flags_ & (kClosing | kNoMore | kDead | kLentIn | kLentOut))
        return false;
    if (!st_)
        return true;
    const State &s = *st_;
    return s.taken == 0 && s.write_seq == s.parse_seq && s.phase == kHead && s.out.pending() == 0;
}

bool Conn::detach(ConnImage &img) {
    if (!detachable())
        return false;
    size_t n = st_ ? st_->end - st_->parse_pos : 0;
    char *p = nullptr;
    if (n) {
        p = static_cast<char *>(std::malloc(n));
        if (!p)
            return false;
        std::memcpy(p, st_->buf + st_->parse_pos, n);
    }
    std::free(img.unread);
    img.unread = p;
    img.unread_len = n;
    img.id = id_;
    img.requests = counters_.requests;
    img.responses = counters_.responses;
    img.parse_errors = counters_.parse_errors;
    img.continues_sent = counters_.continues_sent;
    img.served = (flags_ & kGotBytes) != 0;
    // Dead, not closed: the socket lives on in the image.
    flags_ |= kDead | kClosing | kNoMore | kFinal;
    if (st_)
        st_->parse_pos = st_->end;
    release_if_idle();
    return true;
}

bool Conn::adopt(const ConnImage &img) {
    counters_.requests = img.requests;
    counters_.responses = img.responses;
    counters_.parse_errors = img.parse_errors;
    counters_.continues_sent = img.continues_sent;
    if (img.served || img.unread_len)
        flags_ |= kGotBytes;
    if (img.unread_len == 0)
        return true;
    if (!ensure_state())
        return false;
    State &s = *st_;
    if (img.unread_len + 512 > s.cap) {
        // The bytes fitted the old connection's buffer; give them room here.
        size_t want = img.unread_len + 512;
        char *nb = static_cast<char *>(std::malloc(want));
        if (!nb) {
            close(WEIR_CLOSE_RESOURCE);
            return false;
        }
        if (s.buf != s.block)
            std::free(s.buf);
        s.buf = nb;
        s.cap = want;
    }
    std::memcpy(s.buf, img.unread, img.unread_len);
    s.end = img.unread_len;
    parse();
    flush();
    return true;
}

} // namespace weir
