// Conn, interim answers (weir_respond_interim): 1xx heads such as 103
// Early Hints, sent before an exchange's final answer while the exchange
// stays the host's. On the exchange's turn they go straight to the output;
// before it they wait at the front of its slot's answer buffer
// (ExSlot::interim_len), leave when its turn comes (flush) and are kept
// ahead of the final answer when that one is buffered too.
#include <cerrno>
#include <cstdio>

#include "conn/conn.h"
#include "conn/conn_state.h"
#include "http1/response.h"

namespace weir {

using namespace conn_detail;

namespace {

template <class Out> bool write_interim(Out &out, int status, const weir_header_t *h, size_t nh) {
    char line[16];
    int n = std::snprintf(line, sizeof line, "HTTP/1.1 %03d ", status);
    return out.append(line, static_cast<size_t>(n)) && out.append(http1::reason_phrase(status)) &&
           out.append("\r\n", 2) && http1::write_fields(out, h, nh) && out.append("\r\n", 2);
}

} // namespace

int Conn::interim(Exchange *x, int status, const weir_header_t *headers, size_t num_headers) {
    if (!x || x->owner != this || !st_)
        return -EINVAL;
    State &s = *st_;
    ExSlot &sl = s.slot(x->seq);
    if (&sl.x != x)
        return -EINVAL;
    // Dropped (the connection died or closed before it): its final answer
    // learns it (WEIR_E_GONE) and releases it; nothing to send now.
    if (sl.state == kDropped || (flags_ & (kDead | kAbort)))
        return 0;
    if (sl.state != kTaken)
        return -EINVAL; // answered, or its answer began: too late for a 1xx
    if (x->req.version_minor == 0)
        return 0; // RFC 9110 15.2: no 1xx to an HTTP/1.0 client
    if (status == 100 && sl.body != kBodyNone) {
        // A streamed body's 100 Continue, once: this one when the body
        // still waits for it (weir then sends no other), else nothing (weir's
        // went with a read, the bytes came anyway, or the body was read).
        bool owed = sl.body == kBodyOpen && s.phase == kBodyStream && s.body_seq == x->seq && !s.cont_done;
        if (!owed)
            return 0;
        s.cont_done = true;
        s.cont_pending = false;
    }
    bool ok;
    if (x->seq == s.write_seq) {
        ok = write_interim(s.out, status, headers, num_headers);
    } else {
        if (sl.answer.len != sl.interim_len)
            sl.answer.len = sl.interim_len; // a previous owner's leftovers
        ok = write_interim(sl.answer, status, headers, num_headers);
        sl.interim_len = static_cast<uint32_t>(sl.answer.len);
    }
    if (!ok) {
        abort(WEIR_CLOSE_RESOURCE);
        return -ENOMEM;
    }
    check_output_limit();
    return 0;
}

void Conn::take_interim(ExSlot &sl) {
    sl.answer.len = sl.interim_len;
    sl.interim_len = 0;
}

bool Conn::send_interim(ExSlot &sl) {
    bool ok = st_->out.append(sl.answer.p, sl.interim_len);
    sl.answer.clear();
    sl.interim_len = 0;
    if (!ok)
        abort(WEIR_CLOSE_RESOURCE);
    return ok;
}

} // namespace weir
