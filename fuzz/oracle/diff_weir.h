// The weir side of the differential oracle (fuzz/oracle/diff.h): one request
// read by lib/http1 as fuzz/parser.cc calls it, summed up as a Message, the
// terms fuzz/oracle/diff_llhttp.h sums up llhttp's reading in.
//
// The whole input is read once: the first request's head, its body framing
// (Content-Length or chunked) and, with chunked, the decoded body and the
// trailer fields. Bytes after the first message are ignored. This header
// needs no llhttp: tests/unit/http1/test_smuggling.cc uses it alone.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "http1/parser.h"
#include "weir.h"

namespace diff_fuzz {

enum class Verdict { Accept, Refuse, Incomplete };

struct Field {
    std::string name, value;
    bool operator==(const Field &) const = default;
};

struct Message {
    Verdict verdict = Verdict::Incomplete;
    int code = 0;               // weir: its rc; llhttp: its errno
    const char *reason = "";    // llhttp's reason text
    size_t err_pos = 0;         // llhttp: where it refused
    bool in_body = false;       // the verdict was given after the head
    std::string method, target;
    unsigned major = 0, minor = 0;
    std::vector<Field> fields, trailers;
    size_t head_end = 0, msg_end = 0; // offsets in the input
    bool chunked = false;
    bool keep_alive = false;
    bool tunnel = false; // llhttp: the bytes after the head are another protocol
    std::string body;    // decoded
};

// Big limits: the diff is about syntax and framing; each parser's own size
// limits are out of its scope (llhttp has none of its own).
constexpr size_t kMaxFields = 512;

inline weir_http1_limits diff_limits() {
    weir_http1_limits lim;
    weir::http1::limits_default(&lim);
    lim.max_request_line = 1u << 30;
    lim.max_header_bytes = 1u << 30;
    lim.max_headers = kMaxFields;
    lim.max_chunk_ext = 1u << 30;
    lim.max_trailer_bytes = 1u << 30;
    lim.max_trailers = kMaxFields;
    lim.max_body = UINT64_MAX;
    weir_http1_limits r;
    weir::http1::limits_resolve(&lim, &r);
    return r;
}

inline std::string str(weir_str_t s) { return std::string(s.ptr ? s.ptr : "", s.len); }

inline Message weir_side(const char *data, size_t n) {
    Message m;
    // An exact-size heap copy: reading past n is an ASan report.
    char *buf = static_cast<char *>(malloc(n ? n : 1));
    if (n)
        memcpy(buf, data, n);
    const weir_http1_limits lim = diff_limits();
    std::vector<weir_header_t> hs(kMaxFields);
    weir_http1_request req;
    memset(&req, 0, sizeof req);
    req.size = sizeof req;
    int rc = weir::http1::parse_request(buf, n, lim, &req, hs.data(), hs.size());
    m.code = rc;
    if (rc <= 0) {
        m.verdict = rc == WEIR_E_INCOMPLETE ? Verdict::Incomplete : Verdict::Refuse;
        free(buf);
        return m;
    }
    m.method = str(req.method);
    m.target = str(req.target);
    m.major = 1;
    m.minor = req.version_minor;
    for (uint32_t i = 0; i < req.num_headers; i++)
        m.fields.push_back({str(hs[i].name), str(hs[i].value)});
    m.keep_alive = req.flags & WEIR_REQ_KEEP_ALIVE;
    m.head_end = static_cast<size_t>(rc);
    m.in_body = true;
    const size_t rest = n - m.head_end;
    if (req.body_kind == WEIR_BODY_LENGTH) {
        if (req.content_length <= rest) {
            m.verdict = Verdict::Accept;
            m.body.assign(buf + m.head_end, req.content_length);
            m.msg_end = m.head_end + req.content_length;
        }
    } else if (req.body_kind == WEIR_BODY_CHUNKED) {
        m.chunked = true;
        weir_http1_chunked d;
        weir::http1::chunked_init(&d, lim);
        std::vector<char> out(rest ? rest : 1);
        size_t used = 0, out_len = 0;
        int drc = weir::http1::chunked_decode(&d, buf + m.head_end, rest, &used, out.data(), &out_len);
        m.code = drc;
        if (drc == 0) {
            m.verdict = Verdict::Accept;
            m.body.assign(out.data(), out_len);
            m.msg_end = m.head_end + used;
            std::vector<weir_header_t> ts(kMaxFields);
            int nt = weir::http1::parse_trailers(buf + m.head_end + d.trailer_off, d.trailer_len, lim, ts.data(),
                                                 ts.size());
            for (int i = 0; i < nt; i++)
                m.trailers.push_back({str(ts[i].name), str(ts[i].value)});
        } else if (drc != WEIR_E_INCOMPLETE) {
            m.verdict = Verdict::Refuse;
        }
    } else {
        m.verdict = Verdict::Accept;
        m.msg_end = m.head_end;
    }
    if (m.verdict == Verdict::Accept)
        m.code = rc;
    free(buf);
    return m;
}

} // namespace diff_fuzz
