// H2Session, lifecycle: the graceful drain (GOAWAY 2^31-1 and a PING, the
// final GOAWAY on its ACK), hard closes, timeouts, aborts and wait().
#include <nghttp2/nghttp2.h>

#include "h2/h2_internal.h"
#include "h2/h2_session.h"
#include "h2/h2_stream.h"

namespace weir {

// ---- lifecycle

void H2Session::finish(uint32_t reason, uint32_t h2_error, bool graceful) {
    if (close_reason_ == kOpen || close_reason_ == WEIR_CLOSE_PEER || reason == WEIR_CLOSE_H2_ABUSE ||
        reason == WEIR_CLOSE_H2_PROTOCOL)
        close_reason_ = reason;
    graceful_ = graceful;
    if (!graceful)
        no_input_ = true;
    if (ng_ && !dead_ && !final_goaway_) {
        final_goaway_ = true;
        int32_t last = nghttp2_session_get_last_proc_stream_id(ng_);
        nghttp2_submit_goaway(ng_, NGHTTP2_FLAG_NONE, last, h2_error, nullptr, 0);
    }
    pump();
}

void H2Session::begin_drain(uint32_t reason) {
    if (close_reason_ == kOpen)
        close_reason_ = reason;
    if (draining_ || final_goaway_ || dead_ || !ng_)
        return;
    if (!got_bytes_) { // no client yet to answer a PING: the final GOAWAY now
        finish(reason, NGHTTP2_NO_ERROR);
        return;
    }
    draining_ = true;
    graceful_ = true;
    nghttp2_submit_shutdown_notice(ng_);
    nghttp2_submit_ping(ng_, NGHTTP2_FLAG_NONE, h2_detail::kDrainPing);
    pump();
}

void H2Session::close(uint32_t reason) {
    if (reason == WEIR_CLOSE_SHUTDOWN || reason == WEIR_CLOSE_GOAWAY) {
        begin_drain(reason);
        return;
    }
    // A peer that does not read, a broken socket, no memory: waiting for the
    // open streams would gain nothing. Otherwise the final GOAWAY names the
    // last stream processed and those streams finish (input still taken:
    // their bodies and the WINDOW_UPDATEs their answers need).
    bool hard = reason == WEIR_CLOSE_WRITE_TIMEOUT || reason == WEIR_CLOSE_IO_ERROR ||
                reason == WEIR_CLOSE_RESOURCE || reason == WEIR_CLOSE_OUTPUT_LIMIT ||
                reason == WEIR_CLOSE_SLOW_READER || reason == WEIR_CLOSE_H2_PROTOCOL ||
                reason == WEIR_CLOSE_H2_ABUSE || !got_bytes_;
    finish(reason, NGHTTP2_NO_ERROR, !hard);
}

void H2Session::expire_input(uint32_t reason) {
    finish(got_bytes_ ? reason : WEIR_CLOSE_SILENT, NGHTTP2_NO_ERROR);
    if (!got_bytes_) { // nothing to say to a peer that said nothing
        dead_ = true;
        if (!write_lent_)
            out_.clear();
    }
}

void H2Session::abort(uint32_t reason) {
    if (close_reason_ == kOpen || close_reason_ == WEIR_CLOSE_PEER || close_reason_ == WEIR_CLOSE_GOAWAY ||
        close_reason_ == WEIR_CLOSE_SHUTDOWN)
        close_reason_ = reason;
    dead_ = true;
    no_input_ = true;
    if (!write_lent_)
        out_.clear();
    // Requests not handed out are dropped; streams nghttp2 held are over;
    // those the host holds turn gone.
    while (H2Stream *r = ready_head_) {
        ready_head_ = r->next_ready;
        r->next_ready = nullptr;
        r->host = false;
    }
    ready_tail_ = nullptr;
    for (H2Stream *s = live_; s;) {
        H2Stream *n = s->next_live;
        s->ng_open = false;
        maybe_free(s);
        s = n;
    }
}

void H2Session::on_closed() {
    abort(close_reason_ == kOpen ? WEIR_CLOSE_PEER : close_reason_);
    if (!write_lent_)
        out_.release();
    if (!read_lent_) {
        h2_detail::give_buf(in_, cs_.read_buffer_size);
        in_ = nullptr;
    }
}

ConnWait H2Session::wait() const {
    if (dead_)
        return ConnWait::Done;
    bool to_write = out_.pending() > 0 || (ng_ && nghttp2_session_want_write(ng_));
    if (close_reason_ != kOpen && !to_write && !write_lent_) {
        if (!graceful_)
            return ConnWait::Done;
        // Graceful: after the final GOAWAY (or the peer's EOF, which no PING
        // ACK follows) the open streams finish, then Done.
        bool streams_left = nout_ > 0 || ready_head_;
        for (const H2Stream *s = live_; s && !streams_left; s = s->next_live)
            streams_left = s->ng_open && s->head_done && !s->peer_answered && !s->head_bad;
        if ((final_goaway_ || eof_) && !streams_left)
            return ConnWait::Done;
    }
    if (!got_bytes_ && close_reason_ == kOpen)
        return ConnWait::FirstByte; // our SETTINGS wait for the client's preface
    // An incomplete preface or header block is judged by the header
    // deadline even while our own frames wait to be written.
    if ((!preface_done_ || nheads_ > 0) && (close_reason_ == kOpen || graceful_))
        return ConnWait::Head;
    if (to_write || write_lent_ || window_stalled())
        return ConnWait::Output;
    if (nbuffering_ > 0)
        return ConnWait::Body;
    if (nout_ > 0 || ready_head_)
        return ConnWait::Handler;
    for (const H2Stream *s = live_; s; s = s->next_live)
        if (s->ng_open)
            return ConnWait::Handler; // a stream whose answer is on its way
    return ConnWait::Idle;
}

} // namespace weir
