// The HTTP/1.1 response writers' bodies, for the translation units that
// instantiate them for an output: response.cc for Bytes, and the output's own
// layer for any other (conn/out_queue_response.cc for OutQueue). They live in
// a header so that http1/ names no output of another layer: the writer is
// pure and the connection's queue is the connection's (DESIGN.md §1).
// Include it only to instantiate; callers include response.h.
#pragma once

#include <cstdio>

#include "http1/response.h"

namespace weir::http1 {
namespace detail {

// Appends a decimal without snprintf on the hot path.
template <class Out> inline bool append_u64(Out &out, uint64_t v) {
    char tmp[24];
    char *e = tmp + sizeof tmp;
    char *p = e;
    do {
        *--p = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v);
    return out.append(p, static_cast<size_t>(e - p));
}

inline bool no_body_status(int status) { return status == 204 || status == 304 || (status >= 100 && status < 200); }

// The status line and Date, which every answer begins with.
template <class Out> inline bool write_status_and_date(Out &out, int status) {
    char line[16] = "HTTP/1.1 ";
    line[9] = static_cast<char>('0' + status / 100);
    line[10] = static_cast<char>('0' + status / 10 % 10);
    line[11] = static_cast<char>('0' + status % 10);
    line[12] = ' ';
    return out.append(line, 13) && out.append(reason_phrase(status)) && out.append("\r\nDate: ", 8) &&
           out.append(http_date_now(), 29) && out.append("\r\n", 2);
}

} // namespace detail

template <class Out>
bool write_response(Out &out, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                    size_t body_len, const ResponseShape &shape) {
    // Upper bound of the head, so the appends below never reallocate twice.
    size_t need = 128 + body_len;
    for (size_t i = 0; i < num_headers; ++i)
        need += headers[i].name.len + headers[i].value.len + 4;
    if (!out.reserve_more(need))
        return false;
    bool ok = detail::write_status_and_date(out, status);
    bool bodiless = detail::no_body_status(status);
    if (!bodiless)
        ok = ok && out.append("Content-Length: ", 16) && detail::append_u64(out, body_len) && out.append("\r\n", 2);
    if (shape.close)
        ok = ok && out.append("Connection: close\r\n", 19);
    else if (shape.keep_alive_10)
        ok = ok && out.append("Connection: keep-alive\r\n", 24);
    ok = ok && write_fields(out, headers, num_headers);
    ok = ok && out.append("\r\n", 2);
    if (ok && !bodiless && !shape.head)
        ok = out.append(body, body_len);
    return ok;
}

template <class Out> bool write_error_response(Out &out, int status) {
    const char *reason = reason_phrase(status);
    char body[96];
    int n = std::snprintf(body, sizeof body, "%d %s\n", status, reason);
    static const weir_header_t ct = {{"Content-Type", 12}, {"text/plain", 10}};
    ResponseShape shape;
    shape.close = true;
    return write_response(out, status, &ct, 1, body, static_cast<size_t>(n), shape);
}

template <class Out>
bool write_stream_head(Out &out, int status, const weir_header_t *headers, size_t num_headers, uint64_t length,
                       StreamFraming framing, const ResponseShape &shape) {
    size_t need = 160;
    for (size_t i = 0; i < num_headers; ++i)
        need += headers[i].name.len + headers[i].value.len + 4;
    if (!out.reserve_more(need))
        return false;
    bool ok = detail::write_status_and_date(out, status);
    // A HEAD answer says the length the body would have had, as a GET's would.
    if (framing == StreamFraming::Length || (framing == StreamFraming::None && shape.head && length != UINT64_MAX &&
                                             !detail::no_body_status(status)))
        ok = ok && out.append("Content-Length: ", 16) && detail::append_u64(out, length) && out.append("\r\n", 2);
    else if (framing == StreamFraming::Chunked)
        ok = ok && out.append("Transfer-Encoding: chunked\r\n", 28);
    if (shape.close)
        ok = ok && out.append("Connection: close\r\n", 19);
    else if (shape.keep_alive_10)
        ok = ok && out.append("Connection: keep-alive\r\n", 24);
    ok = ok && write_fields(out, headers, num_headers);
    return ok && out.append("\r\n", 2);
}

template <class Out> bool write_stream_piece(Out &out, StreamFraming framing, const void *p, size_t n) {
    if (framing == StreamFraming::None || n == 0)
        return true;
    if (framing != StreamFraming::Chunked)
        return out.append(p, n);
    char size[20];
    int k = std::snprintf(size, sizeof size, "%zx\r\n", n);
    return out.reserve_more(static_cast<size_t>(k) + n + 2) && out.append(size, static_cast<size_t>(k)) &&
           out.append(p, n) && out.append("\r\n", 2);
}

template <class Out> bool write_last_chunk(Out &out, const weir_header_t *trailers, size_t num_trailers) {
    bool ok = out.append("0\r\n", 3);
    ok = ok && write_fields(out, trailers, num_trailers);
    return ok && out.append("\r\n", 2);
}

template <class Out> bool write_fields(Out &out, const weir_header_t *fields, size_t n) {
    bool ok = true;
    for (size_t i = 0; ok && i < n; ++i)
        ok = out.append(fields[i].name.ptr, fields[i].name.len) && out.append(": ", 2) &&
             out.append(fields[i].value.ptr, fields[i].value.len) && out.append("\r\n", 2);
    return ok;
}

} // namespace weir::http1
