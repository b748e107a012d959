// H2Session, the abuse bounds nghttp2 does not keep for us (or keeps with
// no count we could report): rapid reset (CVE-2023-44487) and control-frame
// floods. The CONTINUATION bound is judged in on_begin_frame
// (h2_callbacks.cc); each ends in abuse(): GOAWAY ENHANCE_YOUR_CALM and
// WEIR_CLOSE_H2_ABUSE.
//
// The windows count frames and streams, not time: a session has no clock,
// and a flood is a ratio of useless to useful work whatever its speed.
#include <nghttp2/nghttp2.h>

#include "h2/h2_session.h"
#include "h2/h2_stream.h"

namespace weir {

void H2Session::abuse(uint32_t) {
    if (close_reason_ == WEIR_CLOSE_H2_ABUSE)
        return;
    h2c_.floods++;
    close_reason_ = WEIR_CLOSE_H2_ABUSE;
    graceful_ = false;
    no_input_ = true;
    if (ng_ && !dead_ && !final_goaway_) {
        final_goaway_ = true;
        nghttp2_submit_goaway(ng_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(ng_),
                              NGHTTP2_ENHANCE_YOUR_CALM, nullptr, 0);
    }
}

// A SETTINGS, PING, WINDOW_UPDATE or empty DATA frame: at most
// max_control_frames between two answers (or two DATA frames we send: a
// download's WINDOW_UPDATEs answer its DATA).
bool H2Session::control_frame() {
    if (hooks().no_control_bound)
        return true;
    if (++ctrl_frames_ <= hs_.max_control_frames)
        return true;
    abuse(1);
    return false;
}

void H2Session::answered_one() { ctrl_frames_ = 0; }

// Of the last reset_window streams the peer opened, at most max_resets may be
// reset by it before our answer ended; the window halves as it fills, so
// the count is of recent streams.
void H2Session::stream_opened() {
    if (++rr_opened_ >= hs_.reset_window) {
        rr_opened_ /= 2;
        rr_resets_ /= 2;
    }
}

void H2Session::reset_by_peer(H2Stream *) {
    h2c_.resets_by_peer++;
    rr_resets_++;
    if (!hooks().no_rapid_reset && rr_resets_ > hs_.max_resets) {
        h2c_.rapid_resets++;
        abuse(2);
    }
}

bool H2Session::unexpected_id(int32_t id) {
    if (!(id & 1))
        return false; // an even id from a client is nghttp2's to refuse
    uint32_t n = recent_n_ < 16 ? recent_n_ : 16;
    int32_t newest = n ? recent_ids_[(recent_n_ - 1) % 16] : 0;
    if (id > newest) {
        recent_ids_[recent_n_ % 16] = id;
        recent_n_++;
        return false;
    }
    // Until the ring wraps it holds every id the peer opened.
    int32_t oldest = recent_n_ > 16 ? recent_ids_[recent_n_ % 16] : 0;
    if (id < oldest)
        return false; // older than what is remembered: let nghttp2 judge
    for (uint32_t i = 0; i < n; i++)
        if (recent_ids_[i] == id)
            return false; // a stream it opened: trailers, or frames after a reset
    h2c_.malformed++;
    // As abuse(): inside nghttp2's callback, so the GOAWAY is only queued;
    // the pump after the read sends it.
    close_reason_ = WEIR_CLOSE_H2_PROTOCOL;
    graceful_ = false;
    no_input_ = true;
    if (ng_ && !dead_ && !final_goaway_) {
        final_goaway_ = true;
        nghttp2_submit_goaway(ng_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(ng_),
                              NGHTTP2_PROTOCOL_ERROR, nullptr, 0);
    }
    return true;
}

} // namespace weir
