// The C face of lib/http1: argument checks, then the internal functions.
#include "guard.h"
#include "http1/parser.h"
#include "util/sized.h"
#include "weir.h"

using weir::guard;
namespace h1 = weir::http1;
namespace sized = weir::sized;

WEIR_EXPORT void weir_http1_limits_init(weir_http1_limits *limits) {
    if (limits)
        h1::limits_default(limits);
}

WEIR_EXPORT int weir_http1_parse_request(const char *buf, size_t len, const weir_http1_limits *limits,
                                         weir_http1_request *req, weir_header_t *headers, size_t headers_cap) {
    return guard([&]() -> int {
        if (!req || !headers || (!buf && len > 0) || !sized::size_ok<weir_http1_request>(req->size))
            return -EINVAL;
        buf = buf ? buf : "";
        weir_http1_limits lim;
        const weir_http1_limits *l = &h1::kDefaultLimits; // the defaults are already resolved: no copy per call
        if (limits) {
            if (!h1::limits_resolve(limits, &lim))
                return -EINVAL;
            l = &lim;
        }
        if (req->size == sizeof *req) [[likely]]
            return h1::parse_request(buf, len, *l, req, headers, headers_cap);
        // A shorter (older) struct: parse into ours, hand out what it holds.
        weir_http1_request full{};
        full.size = sizeof full;
        int rc = h1::parse_request(buf, len, *l, &full, headers, headers_cap);
        sized::copy_out(full, req);
        return rc;
    });
}

WEIR_EXPORT int weir_http1_chunked_init(weir_http1_chunked *d, const weir_http1_limits *limits) {
    return guard([&]() -> int {
        weir_http1_limits lim;
        if (!d || !sized::size_ok<weir_http1_chunked>(d->size) || !h1::limits_resolve(limits, &lim))
            return -EINVAL;
        // Built whole, handed out as far as d->size reaches (the decoder runs
        // on a full copy when the caller's struct is shorter).
        weir_http1_chunked full;
        h1::chunked_init(&full, lim);
        sized::copy_out(full, d);
        return 0;
    });
}

WEIR_EXPORT int weir_http1_chunked_decode(weir_http1_chunked *d, const char *in, size_t in_len, size_t *in_used,
                                          char *out, size_t *out_len) {
    return guard([&]() -> int {
        if (!d || !sized::size_ok<weir_http1_chunked>(d->size) || !in_used || !out_len || (!in && in_len > 0) ||
            (!out && in_len > 0))
            return -EINVAL;
        static char empty;
        in = in ? in : &empty;
        out = out ? out : &empty;
        if (d->size == sizeof *d) [[likely]]
            return h1::chunked_decode(d, in, in_len, in_used, out, out_len);
        // Fields past a shorter struct's size are at their init values on
        // every call: a field appended later must keep 0.2's behaviour there.
        weir_http1_chunked full;
        h1::chunked_init(&full, h1::kDefaultLimits);
        sized::copy_in(d, &full);
        int rc = h1::chunked_decode(&full, in, in_len, in_used, out, out_len);
        sized::copy_out(full, d);
        return rc;
    });
}

WEIR_EXPORT int weir_http1_parse_trailers(const char *buf, size_t len, const weir_http1_limits *limits,
                                          weir_header_t *headers, size_t headers_cap) {
    return guard([&]() -> int {
        weir_http1_limits lim;
        if (!headers || (!buf && len > 0) || !h1::limits_resolve(limits, &lim))
            return -EINVAL;
        return h1::parse_trailers(buf ? buf : "", len, lim, headers, headers_cap);
    });
}
