// Version and error naming: weir_version*, weir_strerror, weir_err_name,
// weir_http1_status.
#include <cerrno>
#include <cstring>

#include "guard.h"
#include "weir.h"

namespace {

struct WeirCode {
    int code;
    const char *name;
    const char *text;
    int status; // HTTP status for parse errors, 0 otherwise
};

#define E(c, s, t) {c, #c, t, s}
const WeirCode kCodes[] = {
    E(WEIR_E_INCOMPLETE, 0, "incomplete input: more bytes needed"),
    E(WEIR_E_BAD_METHOD, 400, "method is not a token"),
    E(WEIR_E_BAD_TARGET, 400, "malformed request-target"),
    E(WEIR_E_BAD_VERSION, 400, "malformed HTTP-version"),
    E(WEIR_E_VERSION_UNSUPPORTED, 505, "HTTP version not supported"),
    E(WEIR_E_BAD_REQUEST_LINE, 400, "malformed request line"),
    E(WEIR_E_REQUEST_LINE_TOO_LONG, 414, "request line too long"),
    E(WEIR_E_BAD_LINE_ENDING, 400, "bare CR or LF where CRLF is required"),
    E(WEIR_E_BAD_HEADER_NAME, 400, "field name is not a token"),
    E(WEIR_E_WS_BEFORE_COLON, 400, "whitespace between field name and colon"),
    E(WEIR_E_BAD_HEADER_VALUE, 400, "NUL or control character in a field value"),
    E(WEIR_E_OBS_FOLD, 400, "obsolete line folding"),
    E(WEIR_E_HEADERS_TOO_LARGE, 431, "header section too large"),
    E(WEIR_E_TOO_MANY_HEADERS, 431, "too many header fields"),
    E(WEIR_E_MISSING_HOST, 400, "HTTP/1.1 request without Host"),
    E(WEIR_E_DUPLICATE_HOST, 400, "more than one Host field"),
    E(WEIR_E_BAD_HOST, 400, "malformed Host"),
    E(WEIR_E_BAD_CONTENT_LENGTH, 400, "invalid Content-Length"),
    E(WEIR_E_CL_AND_TE, 400, "both Content-Length and Transfer-Encoding"),
    E(WEIR_E_BAD_TRANSFER_ENCODING, 400, "chunked is not the final transfer coding"),
    E(WEIR_E_UNKNOWN_TRANSFER_CODING, 501, "transfer coding not implemented"),
    E(WEIR_E_BODY_TOO_LARGE, 413, "body too large"),
    E(WEIR_E_EXPECTATION_FAILED, 417, "expectation not supported"),
    E(WEIR_E_BAD_CHUNK, 400, "malformed chunk"),
    E(WEIR_E_CHUNK_EXT_TOO_LONG, 400, "chunk extensions too long"),
    E(WEIR_E_TRAILERS_TOO_LARGE, 431, "trailer section too large"),
    E(WEIR_E_STATE, 0, "operation does not fit the object's state"),
    E(WEIR_E_GONE, 0, "the exchange's connection is gone"),
    E(WEIR_E_SHUTDOWN, 0, "engine is shutting down"),
    E(WEIR_E_UNAVAILABLE, 0, "backend not available on this kernel"),
};
#undef E

const WeirCode *find(int rc) {
    for (const auto &c : kCodes)
        if (c.code == rc)
            return &c;
    return nullptr;
}

#define N(e) {e, #e}
struct ErrnoName {
    int e;
    const char *name;
};
const ErrnoName kErrnos[] = {
    N(EPERM), N(ENOENT), N(EINTR), N(EIO), N(EBADF), N(EAGAIN), N(ENOMEM), N(EACCES), N(EFAULT), N(EBUSY),
    N(EEXIST), N(EINVAL), N(ENFILE), N(EMFILE), N(ENOSPC), N(EPIPE), N(ERANGE), N(ENOSYS), N(EALREADY),
    N(EINPROGRESS), N(ENOTSOCK), N(EADDRINUSE), N(EADDRNOTAVAIL), N(ENETUNREACH), N(ECONNABORTED),
    N(ECONNRESET), N(ENOBUFS), N(EISCONN), N(ENOTCONN), N(ETIMEDOUT), N(ECONNREFUSED), N(ECANCELED),
    N(EOPNOTSUPP), N(EAFNOSUPPORT), N(EPROTONOSUPPORT), N(ESHUTDOWN), N(EOVERFLOW), N(ENOTSUP),
};
#undef N

} // namespace

WEIR_EXPORT uint32_t weir_version(void) { return WEIR_VERSION_HEX; }

#define WEIR_STR2(x) #x
#define WEIR_STR(x) WEIR_STR2(x)
WEIR_EXPORT const char *weir_version_string(void) {
    return WEIR_STR(WEIR_VERSION_MAJOR) "." WEIR_STR(WEIR_VERSION_MINOR) "." WEIR_STR(WEIR_VERSION_PATCH);
}

WEIR_EXPORT const char *weir_strerror(int rc) {
    if (rc == 0)
        return "success";
    if (const WeirCode *c = find(rc))
        return c->text;
    if (rc < 0 && rc > -4096) {
        // strerrordesc_np is static, thread-safe text (glibc >= 2.32).
        const char *d = strerrordesc_np(-rc);
        if (d)
            return d;
    }
    return "unknown error";
}

WEIR_EXPORT const char *weir_err_name(int rc) {
    if (rc == 0)
        return "OK";
    if (const WeirCode *c = find(rc))
        return c->name;
    for (const auto &e : kErrnos)
        if (-e.e == rc)
            return e.name;
    if (rc < 0 && rc > -4096) {
        const char *n = strerrorname_np(-rc);
        if (n)
            return n;
    }
    return "UNKNOWN";
}

WEIR_EXPORT int weir_http1_status(int rc) {
    const WeirCode *c = find(rc);
    return c ? c->status : 0;
}
