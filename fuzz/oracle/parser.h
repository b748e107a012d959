// The parser fuzz target's oracle: the request parser under split invariance.
//
// Input: 4 control bytes, then the request bytes.
//   byte 0: bits 0-1 pick the scan level compared with the automatic one
//           (scalar, SSE4.2, AVX2, auto); bits 2-4 pick small limits so the
//           414/431/413 paths are reached by short inputs.
//   bytes 1-3: prefix lengths to check (every prefix when the input is short).
// The whole input's answer must equal every prefix's answer or the prefix
// must be WEIR_E_INCOMPLETE; complete answers must carry the same views. Each
// parse reads a heap copy of exactly its length, so ASan sees any over-read.
//
// The oracle lives in this header so fuzz/parser.cc (the libFuzzer entry) and
// tests/unit/http1/test_corpus.cc (which replays fuzz/corpus/parser) share it.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "http1/parser.h"
#include "http1/scan.h"
#include "weir.h"

namespace parser_fuzz {

constexpr size_t kCap = 64;
constexpr size_t kControl = 4;

// A parse answer with views recorded as offsets (or -1 and the bytes for the
// one view that may point outside the buffer: the absolute-form "/").
struct View {
    long off;
    size_t len;
    bool operator==(const View &) const = default;
};
struct Result {
    int rc = 0;
    uint32_t version_minor = 0, target_form = 0, body_kind = 0, flags = 0, num_headers = 0;
    uint64_t content_length = 0;
    View method{}, target{}, path{}, query{}, host{};
    View names[kCap]{}, values[kCap]{};
};

inline View view(const char *base, size_t len, weir_str_t s) {
    if (s.len == 0)
        return {0, 0};
    if (s.ptr >= base && s.ptr + s.len <= base + len)
        return {static_cast<long>(s.ptr - base), s.len};
    return {-1, s.len};
}

inline Result run(const char *data, size_t len, const weir_http1_limits &lim) {
    // An exact-size heap copy: reading past len is an ASan report.
    char *buf = static_cast<char *>(malloc(len ? len : 1));
    if (len)
        memcpy(buf, data, len);
    weir_header_t headers[kCap];
    weir_http1_request req;
    memset(&req, 0, sizeof req);
    req.size = sizeof req;
    Result r;
    weir_http1_limits rl; // resolved, as weir_http1_parse_request would (the fuzz build links lib/ only)
    weir::http1::limits_resolve(&lim, &rl);
    r.rc = weir::http1::parse_request(buf, len, rl, &req, headers, kCap);
    if (r.rc > 0) {
        r.version_minor = req.version_minor;
        r.target_form = req.target_form;
        r.body_kind = req.body_kind;
        r.flags = req.flags;
        r.num_headers = req.num_headers;
        r.content_length = req.content_length;
        r.method = view(buf, len, req.method);
        r.target = view(buf, len, req.target);
        r.path = view(buf, len, req.path);
        r.query = view(buf, len, req.query);
        r.host = view(buf, len, req.host);
        for (uint32_t i = 0; i < req.num_headers && i < kCap; i++) {
            r.names[i] = view(buf, len, headers[i].name);
            r.values[i] = view(buf, len, headers[i].value);
        }
    }
    free(buf);
    return r;
}

inline bool same(const Result &a, const Result &b) {
    if (a.rc != b.rc)
        return false;
    if (a.rc <= 0)
        return true;
    if (a.version_minor != b.version_minor || a.target_form != b.target_form || a.body_kind != b.body_kind ||
        a.flags != b.flags || a.num_headers != b.num_headers || a.content_length != b.content_length)
        return false;
    if (!(a.method == b.method && a.target == b.target && a.path == b.path && a.query == b.query &&
          a.host == b.host))
        return false;
    for (uint32_t i = 0; i < a.num_headers && i < kCap; i++)
        if (!(a.names[i] == b.names[i] && a.values[i] == b.values[i]))
            return false;
    return true;
}

inline weir_http1_limits limits_for(unsigned sel) {
    weir_http1_limits lim;
    weir::http1::limits_default(&lim);
    switch (sel) {
    case 1:
        lim.max_request_line = 24;
        break;
    case 2:
        lim.max_header_bytes = 40;
        break;
    case 3:
        lim.max_headers = 2;
        break;
    case 4:
        lim.max_body = 10;
        break;
    case 5:
        lim.max_request_line = 1; // the smallest: 0 now means the default (weir.h)
        lim.max_header_bytes = 2;
        break;
    default:
        break;
    }
    return lim;
}

// Checks one request under one limit set; NULL when the oracle holds.
inline const char *check(const char *data, size_t n, const weir_http1_limits &lim, const size_t *prefixes,
                         size_t nprefixes, int scan_level, Result *whole_out = nullptr) {
    weir::http1::scan_force(weir::http1::kScanAuto);
    const Result whole = run(data, n, lim);
    if (whole_out)
        *whole_out = whole;
    if (whole.rc > 0 && static_cast<size_t>(whole.rc) > n)
        return "head length past the input";
    if (whole.rc == 0 || (whole.rc < 0 && whole.rc > -4096))
        return "answer is neither a head length nor a weir code";
    weir::http1::scan_force(scan_level);
    const Result pinned = run(data, n, lim);
    weir::http1::scan_force(weir::http1::kScanAuto);
    if (!same(whole, pinned))
        return "scan levels disagree";
    auto prefix_ok = [&](size_t k) {
        Result r = run(data, k, lim);
        return r.rc == WEIR_E_INCOMPLETE || same(r, whole);
    };
    if (n <= 256) {
        for (size_t k = 0; k < n; k++)
            if (!prefix_ok(k))
                return "a prefix disagrees with the whole input";
    } else {
        for (size_t i = 0; i < nprefixes; i++)
            if (!prefix_ok(prefixes[i] % (n + 1)))
                return "a prefix disagrees with the whole input";
    }
    // Bytes after a complete head never change it, and the head alone is enough.
    if (whole.rc > 0 && !same(run(data, static_cast<size_t>(whole.rc), lim), whole))
        return "the head alone disagrees with the whole input";
    return nullptr;
}

inline const char *one(const uint8_t *data, size_t size) {
    if (size < kControl)
        return nullptr;
    const unsigned level = data[0] & 3u;
    const weir_http1_limits lim = limits_for((data[0] >> 2) & 7u);
    const char *req = reinterpret_cast<const char *>(data + kControl);
    const size_t n = size - kControl;
    const size_t prefixes[3] = {static_cast<size_t>(data[1]) * 7u, static_cast<size_t>(data[2]) * 31u,
                                n - data[3] % (n + 1)};
    return check(req, n, lim, prefixes, 3, level == 3 ? weir::http1::kScanAuto : static_cast<int>(level));
}

} // namespace parser_fuzz
