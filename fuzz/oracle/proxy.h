// The proxy fuzz target's oracle: the PROXY protocol parser (lib/proxy/)
// under prefix invariance, which is what "incremental" means for it (the
// connection hands it every byte received so far).
//
// Input: byte 0 picks max_bytes (232 + 64 * byte0, so oversized v2 headers
// are reachable), the rest is what a peer sent.
// For every prefix (every one up to 600 bytes, then a spread of them): a
// prefix may say More, or the whole input's own verdict; a Done on a prefix
// must be the whole input's Done with the same length and header (bytes
// after a header never change it); an Error on a prefix must be the whole
// input's Error with the same cause. A Done consumes no more than it was
// given, and a header that keeps the socket's peer carries no address.
//
// The oracle lives in this header so fuzz/proxy.cc (the libFuzzer entry) and
// tests/unit/proxy/test_proxy_corpus.cc (which replays fuzz/corpus/proxy)
// share it.
#pragma once
#include <cstdint>
#include <cstring>

#include "proxy/proxy.h"

namespace proxy_fuzz {

inline bool same(const weir::proxy::Header &a, const weir::proxy::Header &b) {
    return a.version == b.version && a.keep_peer == b.keep_peer && a.local_command == b.local_command &&
           a.crc_checked == b.crc_checked && a.src_len == b.src_len && a.dst_len == b.dst_len &&
           std::memcmp(&a.src, &b.src, sizeof a.src) == 0 && std::memcmp(&a.dst, &b.dst, sizeof a.dst) == 0 &&
           a.tlv_off == b.tlv_off && a.tlv_len == b.tlv_len;
}

// nullptr when every invariant holds, else what broke.
inline const char *one(const uint8_t *data, size_t size) {
    using namespace weir::proxy;
    if (size < 1)
        return nullptr;
    size_t max_bytes = 232 + 64 * static_cast<size_t>(data[0]);
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    Header whole;
    Result w = parse(p, n, max_bytes, &whole);
    if (w.status == Status::Done) {
        if (w.consumed == 0 || w.consumed > n)
            return "Done consumed outside the input";
        if (whole.keep_peer != (whole.src_len == 0))
            return "keep_peer and an address disagree";
        if (whole.tlv_off + whole.tlv_len > w.consumed)
            return "TLVs outside the header";
        if (whole.version == 1 && w.consumed > kV1Max)
            return "v1 longer than 107 bytes";
        if (whole.version == 2 && w.consumed > max_bytes)
            return "v2 longer than max_bytes";
    } else if (w.status == Status::Error && w.cause == Cause::None) {
        return "Error without a cause";
    }
    size_t step = n <= 600 ? 1 : n / 300;
    for (size_t k = 0; k <= n; k += (k < 600 ? 1 : step)) {
        Header h;
        Result r = parse(p, k, max_bytes, &h);
        if (r.status == Status::More)
            continue;
        if (r.status != w.status)
            return "a prefix's verdict differs from the whole input's";
        if (r.status == Status::Error && r.cause != w.cause)
            return "a prefix's cause differs from the whole input's";
        if (r.status == Status::Done && (r.consumed != w.consumed || !same(h, whole)))
            return "a prefix's header differs from the whole input's";
    }
    return nullptr;
}

} // namespace proxy_fuzz
