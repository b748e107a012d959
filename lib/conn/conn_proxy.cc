// Conn, the PROXY protocol: a connection from a load balancer begins with a
// header (lib/proxy/) that says whom it is really from. It is read from the
// same buffer as HTTP, before the first request: the bytes after it in the
// same read stay where they are and are parsed as HTTP next, so a header
// and a pipeline of requests may arrive in one segment or byte by byte.
#include "conn/conn_state.h"
#include "proxy/proxy.h"

namespace weir {

using namespace conn_detail;

void Conn::expect_proxy(PeerAddr *peer, bool trusted) {
    flags_ |= kProxyWait;
    if (!trusted) {
        // Counted now (a silent one is closed at the deadline, not answered).
        flags_ |= kProxyUntrusted;
        proxy_result_ = ProxyResult::Untrusted;
    }
    proxy_peer_ = peer;
}

bool Conn::proxy_pending() const { return (flags_ & kProxyWait) != 0; }

// Reads the header from the buffer's start (parse_pos is 0 until it ends).
// true: it was read and HTTP may be parsed after it.
bool Conn::proxy_step() {
    State &s = *st_;
    if (s.parse_pos == s.end)
        return false;
    if (flags_ & kProxyUntrusted) {
        // Whatever it sent, it was not for us to believe: answered as a
        // header refused (after its first bytes, so the answer is read).
        flags_ &= static_cast<uint32_t>(~kProxyWait);
        refuse(400, WEIR_CLOSE_PROXY, false);
        return false;
    }
    proxy::Header h;
    proxy::Result r = proxy::parse(s.buf + s.parse_pos, s.end - s.parse_pos, settings_.proxy_max_bytes, &h);
    if (r.status == proxy::Status::More)
        return false;
    flags_ &= static_cast<uint32_t>(~kProxyWait);
    if (r.status == proxy::Status::Error) {
        // (A v2 checksum that does not match is malformed too.)
        proxy_result_ = r.cause == proxy::Cause::Missing     ? ProxyResult::Missing
                        : r.cause == proxy::Cause::Oversized ? ProxyResult::Oversized
                                                             : ProxyResult::Malformed;
        refuse(400, WEIR_CLOSE_PROXY, false);
        return false;
    }
    if (h.keep_peer)
        proxy_result_ = h.version == 1 ? ProxyResult::V1Local : ProxyResult::V2Local;
    else
        proxy_result_ = h.version == 1 ? ProxyResult::V1 : ProxyResult::V2;
    if (!h.keep_peer && proxy_peer_)
        proxy_peer_->set(h.src, h.src_len); // a source that finds no memory leaves no address
    s.parse_pos += r.consumed;
    if (s.parse_pos < s.end)
        flags_ |= kGotBytes; // a request began in the same read
    return true;
}

void Conn::expire_proxy() {
    if (!(flags_ & kProxyWait))
        return;
    flags_ &= static_cast<uint32_t>(~kProxyWait);
    if (!(flags_ & kProxyUntrusted))
        proxy_result_ = ProxyResult::Timeout; // an untrusted one stays counted as such
    if (!(flags_ & kProxyBytes) || !st_ || (flags_ & (kClosing | kNoMore | kDead))) {
        close(WEIR_CLOSE_PROXY); // nothing came: nothing to answer
        return;
    }
    refuse(408, WEIR_CLOSE_PROXY, false);
}

} // namespace weir
