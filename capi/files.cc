// weir_serve_file, weir_file_options_init, weir_content_type: the C face of
// file answers with validators. The decision is lib/files/ (pure, unit
// tested); this glue reads fstat and the clock, builds the fields and hands
// the answer to weir_respond_file (a body) or weir_respond (none).
#include <sys/stat.h>

#include <strings.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string_view>

#include "files/file_answer.h"
#include "files/http_date.h"
#include "guard.h"
#include "util/sized.h"
#include "weir.h"

namespace {

using weir::files::FileDecision;

bool named(const weir_header_t &h, const char *want) {
    size_t n = std::strlen(want);
    return h.name.ptr && h.name.len == n && strncasecmp(h.name.ptr, want, n) == 0;
}

// The fields weir writes itself: a host's copy would contradict them.
bool ours(const weir_header_t &h) {
    return named(h, "etag") || named(h, "last-modified") || named(h, "content-type") ||
           named(h, "content-range") || named(h, "accept-ranges");
}

weir_header_t field(const char *name, const char *value, size_t len) {
    return weir_header_t{{name, std::strlen(name)}, {value, len}};
}

int plain(weir_exchange *ex, int status, weir_header_t *h, size_t nh, const weir_file_options &o) {
    static const char *const bodies[] = {"405 Method Not Allowed\n", "412 Precondition Failed\n",
                                         "416 Range Not Satisfiable\n"};
    const char *body = bodies[status == 405 ? 0 : status == 412 ? 1 : 2];
    h[nh++] = field("Content-Type", "text/plain; charset=utf-8", 25);
    int rc = weir_respond(ex, status, h, nh, body, std::strlen(body), o.respond_flags);
    return rc == 0 ? status : rc;
}

int serve(weir_exchange *ex, int fd, const weir_file_options &o) {
    const weir_request *req = weir_exchange_request(ex);
    if (!req)
        return WEIR_E_STALE;
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0)
        return -EBADF;
    if (!S_ISREG(st.st_mode))
        return -EINVAL;
    struct timespec now;
    ::clock_gettime(CLOCK_REALTIME, &now);
    weir::files::FileFacts facts;
    facts.size = static_cast<uint64_t>(st.st_size);
    facts.mtime_sec = st.st_mtim.tv_sec;
    facts.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    facts.now = now.tv_sec;
    facts.ranges = !(o.flags & WEIR_FILE_NO_RANGES);
    FileDecision d = weir::files::decide_file({req->method.ptr, req->method.len}, req->headers,
                                              req->num_headers, facts);

    // weir's fields (at most 6) and the host's, on the stack unless the host
    // sends many.
    constexpr size_t kStack = 32;
    weir_header_t stack[kStack];
    std::unique_ptr<weir_header_t[]> heap;
    weir_header_t *h = stack;
    if (o.num_headers + 6 > kStack) {
        heap.reset(new weir_header_t[o.num_headers + 6]);
        h = heap.get();
    }
    size_t nh = 0;
    char lm[weir::files::kImfFixdateLen];
    char range[96];
    switch (d.status) {
    case 405:
        h[nh++] = field("Allow", "GET, HEAD", 9);
        return plain(ex, 405, h, nh, o);
    case 412:
        return plain(ex, 412, h, nh, o);
    case 416: {
        int n = std::snprintf(range, sizeof range, "bytes */%llu", static_cast<unsigned long long>(facts.size));
        h[nh++] = field("Content-Range", range, static_cast<size_t>(n));
        return plain(ex, 416, h, nh, o);
    }
    default:
        break;
    }
    weir::files::format_imf_fixdate(d.last_modified, lm);
    h[nh++] = field("ETag", d.etag, d.etag_len);
    h[nh++] = field("Last-Modified", lm, sizeof lm);
    if (d.status != 304) {
        const char *ct = o.content_type ? o.content_type : "application/octet-stream";
        h[nh++] = field("Content-Type", ct, std::strlen(ct));
        if (facts.ranges)
            h[nh++] = field("Accept-Ranges", "bytes", 5);
    }
    if (d.status == 206) {
        int n = std::snprintf(range, sizeof range, "bytes %llu-%llu/%llu", static_cast<unsigned long long>(d.offset),
                              static_cast<unsigned long long>(d.offset + d.length - 1),
                              static_cast<unsigned long long>(facts.size));
        h[nh++] = field("Content-Range", range, static_cast<size_t>(n));
    }
    for (size_t i = 0; i < o.num_headers; i++)
        h[nh++] = o.headers[i];
    int rc = d.status == 304 ? weir_respond(ex, 304, h, nh, nullptr, 0, o.respond_flags)
                             : weir_respond_file(ex, d.status, h, nh, fd, d.offset, d.length, o.respond_flags);
    return rc == 0 ? d.status : rc;
}

} // namespace

WEIR_EXPORT void weir_file_options_init(weir_file_options *o) {
    if (!o)
        return;
    std::memset(o, 0, sizeof *o);
    o->size = sizeof *o;
}

WEIR_EXPORT int weir_serve_file(weir_exchange *ex, int fd, const weir_file_options *opts) {
    if (!ex)
        return -EINVAL;
    weir_file_options o;
    weir_file_options_init(&o);
    if (opts && !weir::sized::copy_in(opts, &o))
        return -EINVAL;
    if ((o.flags & ~WEIR_FILE_NO_RANGES) || (o.respond_flags & ~WEIR_RESPOND_CLOSE) || (o.num_headers && !o.headers))
        return -EINVAL;
    for (size_t i = 0; i < o.num_headers; i++)
        if (ours(o.headers[i]))
            return -EINVAL;
    return weir::guard([&] { return serve(ex, fd, o); });
}

WEIR_EXPORT const char *weir_content_type(const char *name, size_t len) {
    if (!name)
        return weir::files::content_type_for({});
    return weir::files::content_type_for({name, len});
}
