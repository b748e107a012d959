// The C face of lib/http1: argument checks, then the internal functions.
#include "guard.h"
#include "http1/parser.h"
#include "weir.h"

using weir::guard;
namespace h1 = weir::http1;

WEIR_EXPORT void weir_http1_limits_init(weir_http1_limits *limits) {
    if (limits)
        h1::limits_default(limits);
}

WEIR_EXPORT int weir_http1_parse_request(const char *buf, size_t len, const weir_http1_limits *limits,
                                         weir_http1_request *req, weir_header_t *headers, size_t headers_cap) {
    return guard([&]() -> int {
        if (!req || !headers || (!buf && len > 0) || req->size < sizeof *req)
            return -EINVAL;
        buf = buf ? buf : "";
        if (!limits) // the defaults are already resolved: no copy per call
            return h1::parse_request(buf, len, h1::kDefaultLimits, req, headers, headers_cap);
        weir_http1_limits lim;
        if (!h1::limits_resolve(limits, &lim))
            return -EINVAL;
        return h1::parse_request(buf, len, lim, req, headers, headers_cap);
    });
}

WEIR_EXPORT int weir_http1_chunked_init(weir_http1_chunked *d, const weir_http1_limits *limits) {
    return guard([&]() -> int {
        weir_http1_limits lim;
        if (!d || !h1::limits_resolve(limits, &lim))
            return -EINVAL;
        h1::chunked_init(d, lim);
        return 0;
    });
}

WEIR_EXPORT int weir_http1_chunked_decode(weir_http1_chunked *d, const char *in, size_t in_len, size_t *in_used,
                                          char *out, size_t *out_len) {
    return guard([&]() -> int {
        if (!d || d->size != sizeof *d || !in_used || !out_len || (!in && in_len > 0) || (!out && in_len > 0))
            return -EINVAL;
        static char empty;
        return h1::chunked_decode(d, in ? in : &empty, in_len, in_used, out ? out : &empty, out_len);
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
