// Conn, moving: holding a connection at its next request boundary, lifting
// it out as an image, and taking one over (DESIGN.md §6).
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "conn/conn_state.h"

namespace weir {

using namespace conn_detail;

void Conn::hold() { flags_ |= kHeld; }

bool Conn::held() const { return (flags_ & kHeld) != 0; }

void Conn::unhold() {
    if (!(flags_ & kHeld))
        return;
    flags_ &= static_cast<uint32_t>(~kHeld);
    if (st_ && !(flags_ & kDead))
        parse();
}

bool Conn::detachable() const {
    // An upgrade in progress is no request boundary: what follows may not be HTTP.
    // A connection that owes its PROXY header is no boundary either: its
    // peer is not known yet (it moves once the header is read).
    if (flags_ & (kClosing | kNoMore | kDead | kLentIn | kLentOut | kUpgradeWait | kUpgraded | kProxyWait))
        return false;
    if (!st_)
        return true;
    const State &s = *st_;
    return s.taken == 0 && s.write_seq == s.parse_seq && s.phase == kHead && s.out.pending() == 0;
}

bool Conn::detach(ConnImage &img) { return detachable() && lift(img); }

bool Conn::upgrade_ready() const {
    if (!(flags_ & kUpgraded) || (flags_ & (kClosing | kDead | kLentIn | kLentOut)))
        return false;
    if (!st_)
        return true;
    const State &s = *st_;
    return s.taken == 0 && s.write_seq == s.parse_seq && s.out.pending() == 0;
}

bool Conn::detach_upgraded(ConnImage &img) { return upgrade_ready() && lift(img); }

int Conn::upgrade(Exchange *x, const weir_header_t *headers, size_t num_headers, bool raw) {
    bool gone;
    if (int rc = check_slot(x, &gone); rc < 0 || gone)
        return gone ? WEIR_E_GONE : rc;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    const uint32_t want = WEIR_REQ_UPGRADE | WEIR_REQ_KEEP_ALIVE;
    if (sl.state != kTaken || (x->req.flags & want) != want || !(flags_ & kUpgradeWait) ||
        x->seq + 1 != s.parse_seq || sl.body == kBodyOpen)
        return -EINVAL;
    Bytes head;
    bool ok = raw || (head.append("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n", 55) &&
                      http1::write_fields(head, headers, num_headers) && head.append("\r\n", 2));
    s.taken--;
    if (ok && x->seq == s.write_seq) {
        ok = s.out.append(head.p, head.len);
        sl.state = kFree;
        s.write_seq++;
        counters_.responses++;
    } else if (ok) {
        take_interim(sl);
        ok = sl.answer.append(head.p, head.len);
        sl.state = kAnswered;
        sl.answer_closes = false;
        sl.answer_reason = 0;
    } else {
        sl.state = kFree;
    }
    if (!ok) {
        abort(WEIR_CLOSE_RESOURCE);
        return -ENOMEM;
    }
    flags_ |= kUpgraded;
    return 0;
}

bool Conn::lift(ConnImage &img) {
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
    img.sniff = (flags_ & (kSniff | kWantH2)) != 0 && !(flags_ & kWantH2Up);
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
