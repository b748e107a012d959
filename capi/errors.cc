// Version and error naming: weir_version*, weir_strerror, weir_err_name,
// weir_http1_status. weir's own codes come from lib/util/codes.h.
#include <cerrno>
#include <cstring>

#include "guard.h"
#include "util/codes.h"
#include "weir.h"

namespace {

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
    if (const char *t = weir::code_text(rc))
        return t;
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
    if (const char *n = weir::code_name(rc))
        return n;
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

WEIR_EXPORT int weir_http1_status(int rc) { return weir::code_status(rc); }
