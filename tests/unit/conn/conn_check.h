// Helpers shared by the lib/conn unit tests: settings, feeding bytes through
// the read lend, draining the output through the write lend.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "conn/conn.h"
#include "http1/parser.h"
#include "support/http_text.h"

namespace conn_check {

inline weir::ConnSettings settings(uint32_t rbuf = 16384, uint32_t pipeline = 64, uint32_t max_out = 4u << 20) {
    weir::ConnSettings s;
    weir::http1::limits_default(&s.limits);
    s.read_buffer_size = rbuf;
    s.max_pipeline = pipeline;
    s.max_output_bytes = max_out;
    return s;
}

// Feeds bytes through read_space/on_read in pieces of at most piece bytes,
// honouring backpressure; returns how many the Conn took.
inline size_t feed(weir::Conn &c, const std::string &bytes, size_t piece = SIZE_MAX) {
    size_t off = 0;
    while (off < bytes.size()) {
        iovec sp = c.read_space();
        if (sp.iov_len == 0)
            break;
        size_t n = bytes.size() - off;
        if (n > piece)
            n = piece;
        if (n > sp.iov_len)
            n = sp.iov_len;
        std::memcpy(sp.iov_base, bytes.data() + off, n);
        c.on_read(n);
        off += n;
    }
    return off;
}

// Takes all output, with the Date value blanked so outputs compare.
inline std::string drain(weir::Conn &c) {
    std::string out;
    iovec iov[8];
    size_t n;
    while ((n = c.output_iov(iov, 8)) > 0) {
        size_t total = 0;
        for (size_t i = 0; i < n; ++i) {
            out.append(static_cast<char *>(iov[i].iov_base), iov[i].iov_len);
            total += iov[i].iov_len;
        }
        c.on_written(total);
    }
    return testnet::blank_date(out);
}

inline std::string sv(weir_str_t s) { return std::string(s.ptr ? s.ptr : "", s.len); }

inline int answer(weir::Conn &c, weir::Exchange *x, const std::string &body, uint32_t flags = 0) {
    return c.respond(x, 200, nullptr, 0, body.data(), body.size(), flags);
}

} // namespace conn_check
