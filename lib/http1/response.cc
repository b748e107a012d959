#include "http1/response.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "http1/chars.h"

namespace weir::http1 {
namespace {

bool ieq(weir_str_t s, const char *lit) {
    size_t n = std::strlen(lit);
    if (s.len != n)
        return false;
    for (size_t i = 0; i < n; ++i) {
        unsigned char a = static_cast<unsigned char>(s.ptr[i]);
        if (a >= 'A' && a <= 'Z')
            a = static_cast<unsigned char>(a + 32);
        if (a != static_cast<unsigned char>(lit[i]))
            return false;
    }
    return true;
}

// Appends a decimal without snprintf on the hot path.
template <class Out> bool append_u64(Out &out, uint64_t v) {
    char tmp[24];
    char *e = tmp + sizeof tmp;
    char *p = e;
    do {
        *--p = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v);
    return out.append(p, static_cast<size_t>(e - p));
}

bool no_body_status(int status) { return status == 204 || status == 304 || (status >= 100 && status < 200); }

// The status line and Date, which every answer begins with.
template <class Out> bool write_status_and_date(Out &out, int status) {
    char line[16] = "HTTP/1.1 ";
    line[9] = static_cast<char>('0' + status / 100);
    line[10] = static_cast<char>('0' + status / 10 % 10);
    line[11] = static_cast<char>('0' + status % 10);
    line[12] = ' ';
    return out.append(line, 13) && out.append(reason_phrase(status)) && out.append("\r\nDate: ", 8) &&
           out.append(http_date_now(), 29) && out.append("\r\n", 2);
}

} // namespace

const char *reason_phrase(int status) {
    switch (status) {
    case 100: return "Continue";
    case 102: return "Processing";
    case 103: return "Early Hints";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "";
    }
}

const char *http_date_now() {
    thread_local char buf[32];
    thread_local time_t cached = -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec != cached) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        cached = ts.tv_sec;
    }
    return buf;
}

int validate_answer(int status, const weir_header_t *headers, size_t num_headers, const void *body,
                    size_t body_len) {
    if (status < 200 || status > 999)
        return -EINVAL;
    if (num_headers && !headers)
        return -EINVAL;
    if (body_len && !body)
        return -EINVAL;
    for (size_t i = 0; i < num_headers; ++i) {
        const weir_header_t &h = headers[i];
        if (!h.name.ptr || h.name.len == 0 || (h.value.len && !h.value.ptr))
            return -EINVAL;
        for (size_t j = 0; j < h.name.len; ++j)
            if (!is(static_cast<unsigned char>(h.name.ptr[j]), kTchar))
                return -EINVAL;
        for (size_t j = 0; j < h.value.len; ++j) {
            unsigned char c = static_cast<unsigned char>(h.value.ptr[j]);
            if (c == '\r' || c == '\n' || c == 0)
                return -EINVAL;
        }
        if (ieq(h.name, "content-length") || ieq(h.name, "transfer-encoding") || ieq(h.name, "connection") ||
            ieq(h.name, "date"))
            return -EINVAL;
    }
    return 0;
}

template <class Out>
bool write_response(Out &out, int status, const weir_header_t *headers, size_t num_headers, const void *body,
                    size_t body_len, const ResponseShape &shape) {
    // Upper bound of the head, so the appends below never reallocate twice.
    size_t need = 128 + body_len;
    for (size_t i = 0; i < num_headers; ++i)
        need += headers[i].name.len + headers[i].value.len + 4;
    if (!out.reserve_more(need))
        return false;
    bool ok = write_status_and_date(out, status);
    bool bodiless = no_body_status(status);
    if (!bodiless)
        ok = ok && out.append("Content-Length: ", 16) && append_u64(out, body_len) && out.append("\r\n", 2);
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

StreamFraming stream_framing(int status, bool head, uint32_t version_minor, bool length_known) {
    if (head || no_body_status(status))
        return StreamFraming::None;
    if (length_known)
        return StreamFraming::Length;
    return version_minor >= 1 ? StreamFraming::Chunked : StreamFraming::Close;
}

template <class Out>
bool write_stream_head(Out &out, int status, const weir_header_t *headers, size_t num_headers, uint64_t length,
                       StreamFraming framing, const ResponseShape &shape) {
    size_t need = 160;
    for (size_t i = 0; i < num_headers; ++i)
        need += headers[i].name.len + headers[i].value.len + 4;
    if (!out.reserve_more(need))
        return false;
    bool ok = write_status_and_date(out, status);
    // A HEAD answer says the length the body would have had, as a GET's would.
    if (framing == StreamFraming::Length || (framing == StreamFraming::None && shape.head && length != UINT64_MAX &&
                                             !no_body_status(status)))
        ok = ok && out.append("Content-Length: ", 16) && append_u64(out, length) && out.append("\r\n", 2);
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

template bool write_fields<Bytes>(Bytes &, const weir_header_t *, size_t);
template bool write_fields<OutQueue>(OutQueue &, const weir_header_t *, size_t);
template bool write_stream_head<Bytes>(Bytes &, int, const weir_header_t *, size_t, uint64_t, StreamFraming,
                                       const ResponseShape &);
template bool write_stream_head<OutQueue>(OutQueue &, int, const weir_header_t *, size_t, uint64_t, StreamFraming,
                                          const ResponseShape &);
template bool write_stream_piece<Bytes>(Bytes &, StreamFraming, const void *, size_t);
template bool write_stream_piece<OutQueue>(OutQueue &, StreamFraming, const void *, size_t);
template bool write_last_chunk<Bytes>(Bytes &, const weir_header_t *, size_t);
template bool write_last_chunk<OutQueue>(OutQueue &, const weir_header_t *, size_t);

template bool write_response<Bytes>(Bytes &, int, const weir_header_t *, size_t, const void *, size_t,
                                   const ResponseShape &);
template bool write_response<OutQueue>(OutQueue &, int, const weir_header_t *, size_t, const void *, size_t,
                                      const ResponseShape &);
template bool write_error_response<Bytes>(Bytes &, int);
template bool write_error_response<OutQueue>(OutQueue &, int);

} // namespace weir::http1
