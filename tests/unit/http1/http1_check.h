// Shared checks for the http1 unit tests: every request case runs whole, at
// every prefix (each answers WEIR_E_INCOMPLETE or exactly the whole answer,
// views included), and with the scalar scan pinned; every chunked case runs
// whole, in place, split at every 2-way boundary and in 1-byte pieces. The
// oracles are the fuzzers' own (fuzz/oracle/parser.h, fuzz/oracle/chunked.h).
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" { // cmocka 1.1.5's header declares its functions without C linkage
#include <cmocka.h>
}

#include <string>

#include "../../../fuzz/oracle/chunked.h"
#include "../../../fuzz/oracle/parser.h"
#include "http1/parser.h"
#include "http1/scan.h"
#include "weir.h"

using Result = parser_fuzz::Result;

// want: the expected answer; kHead means "complete, head is the whole input".
constexpr int kHead = 0x7fffffff;

inline weir_http1_limits defaults() {
    weir_http1_limits l;
    weir_http1_limits_init(&l);
    return l;
}

inline void check_request_at(const char *file, int line, const std::string &in, int want,
                             const weir_http1_limits &lim) {
    if (want == kHead)
        want = static_cast<int>(in.size());
    const Result whole = parser_fuzz::run(in.data(), in.size(), lim);
    if (whole.rc != want) {
        print_error("request %s: got %d (%s), want %d (%s)\n", in.substr(0, 80).c_str(), whole.rc,
                    weir_err_name(whole.rc), want, weir_err_name(want));
        _fail(file, line);
    }
    for (int level : {weir::http1::kScanScalar, weir::http1::kScanSse42, weir::http1::kScanAvx2}) {
        weir::http1::scan_force(level);
        Result r = parser_fuzz::run(in.data(), in.size(), lim);
        weir::http1::scan_force(weir::http1::kScanAuto);
        if (!parser_fuzz::same(r, whole)) {
            print_error("request %s: scan level %d answers %d\n", in.substr(0, 80).c_str(), level, r.rc);
            _fail(file, line);
        }
    }
    for (size_t k = 0; k < in.size(); k++) {
        Result r = parser_fuzz::run(in.data(), k, lim);
        if (r.rc != WEIR_E_INCOMPLETE && !parser_fuzz::same(r, whole)) {
            print_error("request %s: prefix %zu answers %d (%s), whole %d\n", in.substr(0, 80).c_str(), k, r.rc,
                        weir_err_name(r.rc), whole.rc);
            _fail(file, line);
        }
    }
}

#define CHECK_REQ(in, want) check_request_at(__FILE__, __LINE__, std::string(in, sizeof(in) - 1), want, defaults())
#define CHECK_REQ_LIM(in, want, lim) check_request_at(__FILE__, __LINE__, std::string(in), want, lim)

// Parses s whole into req/headers (views into s) and returns the answer.
inline int parse(const std::string &s, weir_http1_request *req, weir_header_t *h, size_t cap = 64,
                 const weir_http1_limits *lim = nullptr) {
    *req = weir_http1_request{};
    req->size = sizeof *req;
    return weir_http1_parse_request(s.data(), s.size(), lim, req, h, cap);
}

inline std::string str(weir_str_t v) { return std::string(v.ptr ? v.ptr : "", v.len); }

// Chunked: whole (in place and not), every 2-way split, 1-byte pieces.
inline void check_chunked_at(const char *file, int line, const std::string &raw, int want, const std::string &body,
                             const weir_http1_limits &lim, chunked_fuzz::Outcome *out = nullptr) {
    chunked_fuzz::Outcome whole;
    if (const char *why = chunked_fuzz::check(raw.data(), raw.size(), lim, 7, true, &whole)) {
        print_error("chunked %s: %s\n", raw.substr(0, 60).c_str(), why);
        _fail(file, line);
    }
    if (whole.rc != want || std::string(whole.out.begin(), whole.out.end()) != body) {
        print_error("chunked %s: got %d (%s) body '%.*s', want %d (%s) body '%s'\n", raw.substr(0, 60).c_str(),
                    whole.rc, weir_err_name(whole.rc), static_cast<int>(whole.out.size()), whole.out.data(), want,
                    weir_err_name(want), body.c_str());
        _fail(file, line);
    }
    for (size_t k = 0; k <= raw.size(); k++) {
        bool first = true;
        chunked_fuzz::Outcome two = chunked_fuzz::feed(raw.data(), raw.size(), lim, [&] {
            size_t n = first ? k : raw.size();
            first = false;
            return n;
        });
        if (!chunked_fuzz::same(two, whole)) {
            print_error("chunked %s: split at %zu answers %d, whole %d\n", raw.substr(0, 60).c_str(), k, two.rc,
                        whole.rc);
            _fail(file, line);
        }
    }
    if (out)
        *out = whole;
}

#define CHECK_CHUNKED(raw, want, body)                                                                           \
    check_chunked_at(__FILE__, __LINE__, std::string(raw, sizeof(raw) - 1), want, body, defaults())
#define CHECK_CHUNKED_LIM(raw, want, body, lim) check_chunked_at(__FILE__, __LINE__, std::string(raw), want, body, lim)
