// The llhttp side of the differential oracle (fuzz/oracle/diff.h): the same
// input read by llhttp (Node.js's parser, C generated in strict mode from
// Debian's node-llhttp sources, built beside the project and never
// committed), summed up as the Message of fuzz/oracle/diff_weir.h.
#pragma once
#include <cstdlib>
#include <cstring>
#include <string>

#include "diff_weir.h"
#include "llhttp.h"

namespace diff_fuzz {


struct LlState {
    Message *m;
    const char *base;
    std::string name, value;
    bool in_value = false, head_done = false;
};

inline LlState *st(llhttp_t *p) { return static_cast<LlState *>(p->data); }

inline void ll_flush(LlState *s) {
    if (!s->in_value && s->name.empty())
        return;
    (s->head_done ? s->m->trailers : s->m->fields).push_back({s->name, s->value});
    s->name.clear();
    s->value.clear();
    s->in_value = false;
}

inline const llhttp_settings_t &ll_settings() {
    static const llhttp_settings_t s = [] {
        llhttp_settings_t x;
        llhttp_settings_init(&x);
        x.on_method = [](llhttp_t *p, const char *a, size_t n) {
            st(p)->m->method.append(a, n);
            return 0;
        };
        x.on_url = [](llhttp_t *p, const char *a, size_t n) {
            st(p)->m->target.append(a, n);
            return 0;
        };
        x.on_header_field = [](llhttp_t *p, const char *a, size_t n) {
            LlState *s = st(p);
            if (s->in_value)
                ll_flush(s);
            s->name.append(a, n);
            return 0;
        };
        x.on_header_value = [](llhttp_t *p, const char *a, size_t n) {
            LlState *s = st(p);
            s->in_value = true;
            s->value.append(a, n);
            return 0;
        };
        x.on_header_value_complete = [](llhttp_t *p) {
            LlState *s = st(p);
            s->in_value = true; // an empty value has no on_header_value
            ll_flush(s);
            return 0;
        };
        x.on_headers_complete = [](llhttp_t *p) -> int {
            LlState *s = st(p);
            ll_flush(s);
            s->head_done = true;
            s->m->major = p->http_major;
            s->m->minor = p->http_minor;
            s->m->chunked = p->flags & F_CHUNKED;
            return HPE_PAUSED; // to learn where the head ends
        };
        x.on_body = [](llhttp_t *p, const char *a, size_t n) {
            st(p)->m->body.append(a, n);
            return 0;
        };
        x.on_message_complete = [](llhttp_t *p) -> int {
            LlState *s = st(p);
            ll_flush(s);
            s->m->keep_alive = llhttp_should_keep_alive(p);
            // CONNECT, or Upgrade honoured: what follows is another protocol.
            s->m->tunnel = llhttp_get_upgrade(p);
            s->m->verdict = Verdict::Accept;
            return HPE_PAUSED; // the first message only
        };
        return x;
    }();
    return s;
}

inline Message llhttp_side(const char *data, size_t n) {
    Message m;
    // An exact-size heap copy here too, so an over-read by llhttp shows.
    char *buf = static_cast<char *>(malloc(n ? n : 1));
    if (n)
        memcpy(buf, data, n);
    LlState s{&m, buf, {}, {}};
    llhttp_t p;
    llhttp_init(&p, HTTP_REQUEST, &ll_settings());
    p.data = &s;
    size_t off = 0;
    for (;;) {
        llhttp_errno_t e = llhttp_execute(&p, buf + off, n - off);
        const size_t at = e == HPE_OK ? n : static_cast<size_t>(llhttp_get_error_pos(&p) - buf);
        if (e == HPE_PAUSED && m.verdict != Verdict::Accept) {
            // Paused in on_headers_complete: the head ends here.
            m.head_end = at;
            m.in_body = true;
            llhttp_resume(&p);
            off = at;
            continue;
        }
        if (e == HPE_PAUSED) { // on_message_complete
            m.msg_end = at;
            break;
        }
        if (e == HPE_OK) {
            m.verdict = Verdict::Incomplete;
            break;
        }
        m.verdict = Verdict::Refuse;
        m.code = e;
        m.reason = llhttp_get_error_reason(&p);
        m.err_pos = at;
        break;
    }
    free(buf);
    return m;
}

} // namespace diff_fuzz
