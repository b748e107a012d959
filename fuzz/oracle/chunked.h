// The chunked fuzz target's oracle: the chunked decoder under split invariance.
//
// Input: 4 control bytes, then raw chunked bytes.
//   byte 0: bits 0-2 pick small limits (so 413/431/extension limits are
//           reachable); bit 3 decodes the whole input in place.
//   bytes 1-3: seed the schedule of piece sizes for the split run.
// Whole, split and one-byte-at-a-time runs must give the same answer, the
// same decoded bytes and the same counters; a finished body's trailer
// section must parse with http1::parse_trailers to the same field count.
// The oracle calls lib/http1 directly (the fuzz build links lib/ only); the
// limits it is given are resolved first, as weir_http1_* would resolve them.
//
// The oracle lives in this header so fuzz/chunked.cc (the libFuzzer entry) and
// tests/unit/http1/test_corpus.cc (which replays fuzz/corpus/chunked) share it.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "http1/parser.h"
#include "weir.h"

namespace chunked_fuzz {

inline weir_http1_limits resolved(const weir_http1_limits &lim) {
    weir_http1_limits r;
    weir::http1::limits_resolve(&lim, &r);
    return r;
}

constexpr size_t kControl = 4;

struct Outcome {
    int rc = 0;
    size_t used = 0;
    std::vector<char> out;
    uint64_t body_len = 0, raw_len = 0, trailer_off = 0, trailer_len = 0;
    uint32_t num_trailers = 0;
};

inline weir_http1_limits limits_for(unsigned sel) {
    weir_http1_limits lim;
    weir::http1::limits_default(&lim);
    switch (sel) {
    case 1:
        lim.max_body = 16;
        break;
    case 2:
        lim.max_chunk_ext = 8;
        break;
    case 3:
        lim.max_trailer_bytes = 24;
        break;
    case 4:
        lim.max_trailers = 1;
        break;
    case 5:
        lim.max_body = 0;
        lim.max_chunk_ext = 0;
        lim.max_trailer_bytes = 2;
        break;
    default:
        break;
    }
    return lim;
}

// What the decoder says once it stopped.
inline Outcome with_decoder(Outcome &r, const weir_http1_chunked &d) {
    r.body_len = d.body_len;
    r.raw_len = d.raw_len;
    if (r.rc == 0) {
        r.trailer_off = d.trailer_off;
        r.trailer_len = d.trailer_len;
        r.num_trailers = d.num_trailers;
    }
    return r;
}

// Feeds raw in pieces whose sizes come from next_size(); every piece is a
// heap copy of exactly its size so ASan sees an over-read.
template <typename Next> Outcome feed(const char *raw, size_t n, const weir_http1_limits &lim, Next next_size) {
    Outcome r;
    weir_http1_chunked d;
    weir::http1::chunked_init(&d, resolved(lim));
    r.out.resize(n);
    size_t pos = 0, o = 0;
    r.rc = WEIR_E_INCOMPLETE;
    while (pos < n) {
        size_t piece = next_size();
        if (piece > n - pos)
            piece = n - pos;
        char *in = static_cast<char *>(malloc(piece ? piece : 1));
        memcpy(in, raw + pos, piece);
        size_t used = 0, out_len = 0;
        r.rc = weir::http1::chunked_decode(&d, in, piece, &used, r.out.data() + o, &out_len);
        free(in);
        if (used > piece || out_len > used) {
            r.rc = 1; // impossible answers are flagged by check()
            break;
        }
        pos += used;
        o += out_len;
        if (r.rc != WEIR_E_INCOMPLETE)
            break;
        if (used != piece) {
            r.rc = 2;
            break;
        }
    }
    r.used = pos;
    r.out.resize(o);
    return with_decoder(r, d);
}

inline Outcome in_place(const char *raw, size_t n, const weir_http1_limits &lim) {
    Outcome r;
    std::vector<char> buf(raw, raw + n);
    weir_http1_chunked d;
    weir::http1::chunked_init(&d, resolved(lim));
    size_t out_len = 0;
    char one = 0; // an empty input still needs a pointer
    r.rc = weir::http1::chunked_decode(&d, n ? buf.data() : &one, n, &r.used, n ? buf.data() : &one, &out_len);
    r.out.assign(buf.data(), buf.data() + out_len);
    return with_decoder(r, d);
}

inline bool same(const Outcome &a, const Outcome &b) {
    return a.rc == b.rc && a.used == b.used && a.out == b.out && a.body_len == b.body_len &&
           a.raw_len == b.raw_len && a.trailer_off == b.trailer_off && a.trailer_len == b.trailer_len &&
           a.num_trailers == b.num_trailers;
}

// NULL when the oracle holds for raw[0, n) under lim; seed drives the split.
inline const char *check(const char *raw, size_t n, const weir_http1_limits &lim, uint32_t seed, bool inplace,
                         Outcome *whole_out = nullptr) {
    Outcome whole = inplace ? in_place(raw, n, lim) : feed(raw, n, lim, [n] { return n; });
    if (whole_out)
        *whole_out = whole;
    if (whole.rc > 0 || (whole.rc < 0 && whole.rc > -4096))
        return "impossible answer or piece accounting";
    if (whole.rc == WEIR_E_INCOMPLETE && whole.used != n)
        return "incomplete without consuming all input";
    if (whole.body_len != whole.out.size())
        return "body_len is not the decoded byte count";
    if (whole.raw_len != whole.used)
        return "raw_len is not the consumed byte count";
    uint32_t x = seed * 2654435761u + 1;
    Outcome split = feed(raw, n, lim, [&x] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return static_cast<size_t>(x % 9 == 0 ? 0 : x % 23 == 0 ? 300 : x % 17);
    });
    if (!same(whole, split))
        return "split input decodes differently";
    if (n <= 1024 && !same(whole, feed(raw, n, lim, [] { return size_t{1}; })))
        return "one-byte pieces decode differently";
    if (whole.rc == 0) {
        if (whole.trailer_off + whole.trailer_len != whole.used || whole.trailer_len < 2)
            return "trailer section is not where the body ends";
        weir_header_t h[64];
        int t = weir::http1::parse_trailers(raw + whole.trailer_off, whole.trailer_len, resolved(lim), h, 64);
        if (t != static_cast<int>(whole.num_trailers))
            return "parse_trailers disagrees with the decoder";
    }
    return nullptr;
}

inline const char *one(const uint8_t *data, size_t size) {
    if (size < kControl)
        return nullptr;
    const weir_http1_limits lim = limits_for(data[0] & 7u);
    const uint32_t seed = static_cast<uint32_t>(data[1]) | static_cast<uint32_t>(data[2]) << 8 |
                          static_cast<uint32_t>(data[3]) << 16;
    return check(reinterpret_cast<const char *>(data + kControl), size - kControl, lim, seed, (data[0] & 8u) != 0);
}

} // namespace chunked_fuzz
