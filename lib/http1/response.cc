#include "http1/response.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "http1/chars.h"
#include "http1/response_write.h"

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

StreamFraming stream_framing(int status, bool head, uint32_t version_minor, bool length_known) {
    if (head || detail::no_body_status(status))
        return StreamFraming::None;
    if (length_known)
        return StreamFraming::Length;
    return version_minor >= 1 ? StreamFraming::Chunked : StreamFraming::Close;
}

// The Bytes writers (an answer kept until its turn); the OutQueue ones are
// instantiated by their own layer (conn/out_queue_response.cc).
template bool write_fields<Bytes>(Bytes &, const weir_header_t *, size_t);
template bool write_stream_head<Bytes>(Bytes &, int, const weir_header_t *, size_t, uint64_t, StreamFraming,
                                       const ResponseShape &);
template bool write_stream_piece<Bytes>(Bytes &, StreamFraming, const void *, size_t);
template bool write_last_chunk<Bytes>(Bytes &, const weir_header_t *, size_t);
template bool write_response<Bytes>(Bytes &, int, const weir_header_t *, size_t, const void *, size_t,
                                   const ResponseShape &);
template bool write_error_response<Bytes>(Bytes &, int);

} // namespace weir::http1
