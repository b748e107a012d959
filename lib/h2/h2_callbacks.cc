// The nghttp2 callbacks of H2Session: frames and header fields in, streams'
// state out. Each callback does the least it can and hands the rest to the
// session (h2_body.cc for requests, h2_limits.cc for the bounds).
#include <cstring>
#include <tuple>

#include "h2/h2_internal.h"
#include "h2/h2_session.h"
#include "h2/h2_stream.h"

namespace weir::h2_detail {
namespace {

H2Session &sess(void *u) { return *static_cast<H2Session *>(u); }

H2Stream *stream(nghttp2_session *ng, int32_t id) {
    return static_cast<H2Stream *>(nghttp2_session_get_stream_user_data(ng, id));
}

// Every frame's header, before its payload: the flood bounds (the
// CONTINUATION count and size of one header block, control frames) are
// judged here, before nghttp2 spends anything on the payload.
int on_begin_frame(nghttp2_session *, const nghttp2_frame_hd *hd, void *u) {
    H2Session &s = sess(u);
    if (s.close_reason_ == WEIR_CLOSE_H2_ABUSE)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    switch (hd->type) {
    case NGHTTP2_HEADERS:
        if (s.unexpected_id(hd->stream_id))
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        s.block_frames_ = 1;
        s.block_bytes_ = static_cast<uint32_t>(hd->length);
        break;
    case NGHTTP2_CONTINUATION:
        s.block_frames_++;
        s.block_bytes_ += static_cast<uint32_t>(hd->length);
        if (!H2Session::hooks().no_continuation_bound &&
            (s.block_frames_ > s.hs_.max_continuations + 1 || s.block_bytes_ > s.hs_.max_header_block)) {
            s.h2c_.continuation_floods++;
            s.abuse(0);
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        break;
    case NGHTTP2_DATA:
        if (hd->length == 0 && !(hd->flags & NGHTTP2_FLAG_END_STREAM) && !s.control_frame())
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        break;
    case NGHTTP2_SETTINGS:
    case NGHTTP2_PING:
    case NGHTTP2_WINDOW_UPDATE:
        if (!(hd->type == NGHTTP2_SETTINGS && (hd->flags & NGHTTP2_FLAG_ACK)) && !s.control_frame())
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        break;
    default:
        break;
    }
    return 0;
}

int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *u) {
    H2Session &s = sess(u);
    if (f->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        H2Stream *st = s.new_stream(f->hd.stream_id);
        if (!st)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; // RST_STREAM: no memory for it
        nghttp2_session_set_stream_user_data(ng, f->hd.stream_id, st);
        st->in_head = true;
        s.nheads_++;
        s.h2c_.streams++;
        s.stream_opened();
    } else if (H2Stream *st = stream(ng, f->hd.stream_id)) {
        st->trailers = true;
        st->in_head = true;
        s.nheads_++;
    }
    return 0;
}

int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
              const uint8_t *value, size_t valuelen, uint8_t, void *u) {
    H2Stream *st = stream(ng, f->hd.stream_id);
    if (!st || f->hd.type != NGHTTP2_HEADERS)
        return 0;
    sess(u).field(st, reinterpret_cast<const char *>(name), namelen, reinterpret_cast<const char *>(value),
                  valuelen);
    return 0;
}

// A field nghttp2 would otherwise drop silently (an uppercase name, a bad
// character): RFC 9113 §8.2.1 makes the request malformed, a stream error
// (RST_STREAM PROTOCOL_ERROR, nghttp2's default code for this return).
int on_invalid_header(nghttp2_session *, const nghttp2_frame *, const uint8_t *, size_t, const uint8_t *, size_t,
                      uint8_t, void *) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *u) {
    H2Session &s = sess(u);
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
        if (H2Stream *st = stream(ng, f->hd.stream_id)) {
            if (st->in_head) {
                st->in_head = false;
                s.nheads_--;
            }
            bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
            if (f->headers.cat == NGHTTP2_HCAT_REQUEST)
                s.request_done(st, end);
            else if (end)
                s.body_end(st);
        }
        break;
    case NGHTTP2_DATA:
        if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
            if (H2Stream *st = stream(ng, f->hd.stream_id))
                s.body_end(st);
        break;
    case NGHTTP2_SETTINGS:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK))
            s.preface_done_ = true;
        break;
    case NGHTTP2_PING:
        if ((f->hd.flags & NGHTTP2_FLAG_ACK) && s.draining_ && !s.final_goaway_ &&
            std::memcmp(f->ping.opaque_data, kDrainPing, 8) == 0)
            s.finish(s.close_reason(), NGHTTP2_NO_ERROR, true);
        break;
    case NGHTTP2_RST_STREAM:
        if (H2Stream *st = stream(ng, f->hd.stream_id))
            if (!st->peer_answered)
                s.reset_by_peer(st);
        break;
    default:
        break;
    }
    return s.close_reason_ == WEIR_CLOSE_H2_ABUSE ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

int on_data_chunk(nghttp2_session *ng, uint8_t, int32_t id, const uint8_t *data, size_t len, void *u) {
    H2Session &s = sess(u);
    if (H2Stream *st = stream(ng, id))
        s.body_chunk(st, data, len);
    else
        nghttp2_session_consume(ng, id, len); // a stream we keep nothing for: its window back
    return 0;
}

int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t, void *u) {
    if (H2Stream *st = stream(ng, id))
        sess(u).stream_closed(st);
    return 0;
}

int on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *u) {
    H2Session &s = sess(u);
    switch (f->hd.type) {
    case NGHTTP2_RST_STREAM:
        if (f->rst_stream.error_code == NGHTTP2_PROTOCOL_ERROR)
            s.h2c_.malformed++;
        else if (f->rst_stream.error_code == NGHTTP2_REFUSED_STREAM)
            s.h2c_.refused++;
        if (H2Stream *st = stream(ng, f->hd.stream_id))
            st->peer_answered = true;
        break;
    case NGHTTP2_GOAWAY:
        s.h2c_.goaways_sent++;
        if (f->goaway.error_code != NGHTTP2_NO_ERROR && s.close_reason_ == H2Session::kOpen) {
            // nghttp2 found a connection error itself.
            s.close_reason_ = WEIR_CLOSE_H2_PROTOCOL;
            s.no_input_ = true;
        }
        break;
    case NGHTTP2_DATA:
        s.ctrl_frames_ = 0; // the peer's WINDOW_UPDATEs answer our DATA
        [[fallthrough]];
    case NGHTTP2_HEADERS:
        if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
            if (H2Stream *st = stream(ng, f->hd.stream_id)) {
                st->peer_answered = true;
                if (st->rst_after && !st->peer_ended)
                    nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
            }
        break;
    default:
        break;
    }
    return 0;
}

// Nothing here throws into nghttp2's C frames: a failed allocation in a
// callback (a field, a body chunk) fails the callback, and feed() closes
// the connection with WEIR_CLOSE_RESOURCE.
template <auto F> struct Guard;
template <class R, class... A, R (*F)(A...)> struct Guard<F> {
    static R call(A... a) {
        try {
            return F(a...);
        } catch (...) {
            void *u = std::get<sizeof...(A) - 1>(std::tie(a...));
            static_cast<H2Session *>(u)->oom_ = true;
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
    }
};

} // namespace

bool make_session(H2Session &s) {
    nghttp2_session_callbacks *cb = nullptr;
    nghttp2_option *opt = nullptr;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return false;
    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cb);
        return false;
    }
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, Guard<on_begin_frame>::call);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, Guard<on_begin_headers>::call);
    nghttp2_session_callbacks_set_on_header_callback(cb, Guard<on_header>::call);
    nghttp2_session_callbacks_set_on_invalid_header_callback(cb, Guard<on_invalid_header>::call);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, Guard<on_frame_recv>::call);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, Guard<on_data_chunk>::call);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, Guard<on_stream_close>::call);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, Guard<on_frame_send>::call);
    nghttp2_session_callbacks_set_send_data_callback(cb, send_data);
    // Request bodies: the window opens as the host reads (body_read), so a
    // slow reader bounds what the client sends.
    nghttp2_option_set_no_auto_window_update(opt, 1);
    // Our encoder's table stays within our bound whatever the peer offers.
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, s.hs_.header_table);
    // weir's own bounds (h2_limits.cc) count and close first; nghttp2's
    // stay as a backstop, set past ours.
    nghttp2_option_set_max_continuations(opt, s.hs_.max_continuations + 2);
    nghttp2_option_set_stream_reset_rate_limit(opt, UINT64_MAX / 2, UINT64_MAX / 2);
    s.mem_ = mem_cache_new();
    nghttp2_mem mem = session_mem(s.mem_); // nghttp2 keeps a copy
    int rv = s.mem_ ? nghttp2_session_server_new3(&s.ng_, cb, &s, opt, &mem) : NGHTTP2_ERR_NOMEM;
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    if (rv != 0) {
        s.ng_ = nullptr;
        return false;
    }
    uint32_t hl = s.cs_.limits.max_header_bytes ? s.cs_.limits.max_header_bytes : 16384;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s.hs_.max_concurrent_streams},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, s.hs_.header_table},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, s.hs_.stream_window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, hl},
        // Not SETTINGS_NO_RFC7540_PRIORITIES=1 (230 of 12,770 Ir per request
        // less): nghttp2 then keeps no closed streams, and frames on a closed
        // stream are no longer STREAM_CLOSED (h2spec 5.1/5-12, 5.3.1/2, 6.3/1).
    };
    if (nghttp2_submit_settings(s.ng_, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0)
        return false;
    return true;
}

} // namespace weir::h2_detail
