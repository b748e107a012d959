#include "leak_check.h"

#include <dirent.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "support/net.h"

// Under ASan and TSan the sanitizer's allocator replaces glibc's (mallinfo2
// would read an arena nobody uses: TSan's checks read 0 -> 0 and the
// checker's own arm failed). The name says ASan; it means either.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LEAKCHECK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LEAKCHECK_ASAN 1
#endif
#endif
#ifdef LEAKCHECK_ASAN
// The sanitizer runtime's own count (sanitizer/allocator_interface.h, which
// GCC's packages do not ship).
extern "C" size_t __sanitizer_get_current_allocated_bytes(void);
#endif

namespace leakcheck {

Fds fds() {
    Fds out;
    DIR *d = ::opendir("/proc/self/fd");
    if (!d)
        return out;
    int own = ::dirfd(d);
    while (dirent *e = ::readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        int fd = std::atoi(e->d_name);
        if (fd == own)
            continue;
        char target[256];
        std::string link = std::string("/proc/self/fd/") + e->d_name;
        ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
        out.emplace_back(fd, n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string("?"));
    }
    ::closedir(d);
    return out;
}

size_t allocated_bytes() {
#ifdef LEAKCHECK_ASAN
    return __sanitizer_get_current_allocated_bytes();
#else
    // uordblks leaves out chunks glibc serves with their own mmap (128 KiB
    // and up, until a free raises the threshold): hblkhd holds those.
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#endif
}

bool exact_byte_count(int, char **argv) {
#ifdef LEAKCHECK_ASAN
    (void)argv;
    return true;
#else
    static const char kTunable[] = "glibc.malloc.tcache_count=0";
    const char *t = std::getenv("GLIBC_TUNABLES");
    if (t && std::strstr(t, kTunable))
        return true;
    std::string v = t && *t ? std::string(t) + ":" + kTunable : std::string(kTunable);
    ::setenv("GLIBC_TUNABLES", v.c_str(), 1);
    ::execv("/proc/self/exe", argv);
    return false;
#endif
}

size_t rss_bytes() {
    FILE *f = std::fopen("/proc/self/statm", "r");
    unsigned long size = 0, rss = 0;
    if (f) {
        if (std::fscanf(f, "%lu %lu", &size, &rss) != 2)
            rss = 0;
        std::fclose(f);
    }
    return rss * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

Baseline take() {
    Baseline b;
    b.fds = fds();
    b.fds.reserve(b.fds.size() + 64); // the check's own copy must not move the byte count
    b.bytes = allocated_bytes();
    return b;
}

namespace {

// What names the descriptors added (+) and gone (-), grouped by target kind.
std::string diff(const Fds &before, const Fds &after) {
    std::map<std::string, long> kinds;
    auto kind = [](const std::string &t) {
        size_t p = t.find(":[");
        return p == std::string::npos ? t : t.substr(0, p + 1) + (t.compare(0, 10, "anon_inode") == 0 ? t.substr(p + 1) : "");
    };
    std::map<int, std::string> b(before.begin(), before.end()), a(after.begin(), after.end());
    for (auto &[fd, t] : a)
        if (!b.count(fd) || b[fd] != t)
            kinds[kind(t)]++;
    for (auto &[fd, t] : b)
        if (!a.count(fd) || a[fd] != t)
            kinds[kind(t)]--;
    std::string s;
    for (auto &[k, n] : kinds)
        if (n)
            s += (s.empty() ? "" : ", ") + std::string(n > 0 ? "+" : "") + std::to_string(n) + " " + k;
    return s;
}

} // namespace

Verdict check(const Baseline &b, size_t byte_bound, int settle_ms) {
    Verdict v;
    Fds now = fds();
    for (int64_t until = testnet::now_ms() + settle_ms; now.size() != b.fds.size() && testnet::now_ms() < until;) {
        testnet::sleep_ms(10);
        now = fds();
    }
    v.fds_before = b.fds.size();
    v.fds_after = now.size();
    v.fd_delta = static_cast<long>(now.size()) - static_cast<long>(b.fds.size());
    v.fd_diff = diff(b.fds, now);
    v.fds_ok = v.fd_delta == 0 && v.fd_diff.empty();
    now.clear();
    now.shrink_to_fit();
    v.bytes_before = b.bytes;
    v.bytes_after = allocated_bytes();
    v.byte_delta = static_cast<long long>(v.bytes_after) - static_cast<long long>(v.bytes_before);
    v.bytes_ok = v.byte_delta <= static_cast<long long>(byte_bound) && v.byte_delta >= -static_cast<long long>(byte_bound);
    return v;
}

std::string Verdict::describe() const {
    char b[256];
    std::snprintf(b, sizeof b, "fds %zu -> %zu (%+ld%s%s), allocated bytes %zu -> %zu (%+lld)", fds_before, fds_after,
                  fd_delta, fd_diff.empty() ? "" : ": ", fd_diff.c_str(), bytes_before, bytes_after, byte_delta);
    return b;
}

uint64_t closes_total(const weir_metrics &m) {
    uint64_t n = 0;
    for (uint64_t c : m.closes)
        n += c;
    return n;
}

std::string conservation(const std::vector<weir_metrics> &ms) {
    uint64_t accepted = 0, closed = 0, open = 0, in_flight = 0;
    for (const weir_metrics &m : ms) {
        accepted += m.accepted;
        closed += closes_total(m);
        open += m.connections_open;
        in_flight += m.transplant_in_flight;
    }
    if (accepted == closed && open == 0 && in_flight == 0)
        return "";
    char b[200];
    std::snprintf(b, sizeof b, "accepted %llu, closed %llu, open %llu, transplants in flight %llu",
                  (unsigned long long)accepted, (unsigned long long)closed, (unsigned long long)open,
                  (unsigned long long)in_flight);
    return b;
}

std::vector<std::string> mix_mismatches(const mixed::Counts &c, const std::vector<weir_metrics> &ms) {
    weir_metrics m{};
    for (const weir_metrics &x : ms) {
        m.accepted += x.accepted;
        m.parse_errors += x.parse_errors;
        m.responses += x.responses;
        for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
            m.closes[r] += x.closes[r];
    }
    std::vector<std::string> out;
    auto same = [&](const char *what, uint64_t server, uint64_t client) {
        if (server != client)
            out.push_back(std::string(what) + ": the server counted " + std::to_string(server) + ", the mix " +
                          std::to_string(client));
    };
    std::string why = conservation(ms);
    if (!why.empty())
        out.push_back("conservation: " + why);
    same("accepted vs connections made", m.accepted, c.connections);
    same("bad_request closes vs invalid endings", m.closes[WEIR_CLOSE_BAD_REQUEST], c.ends[mixed::kEndInvalid]);
    same("parse errors vs invalid requests", m.parse_errors, c.sent[mixed::kInvalid]);
    same("not_keep_alive closes vs Connection: close endings", m.closes[WEIR_CLOSE_NOT_KEEP_ALIVE],
         c.ends[mixed::kEndClose]);
    // Every silent client that waited was cut by the silent timer; one that
    // gave up (20-200 ms) could be cut too only if its worker stalled for
    // most of the 1 s header timeout.
    uint64_t silent = m.closes[WEIR_CLOSE_SILENT];
    if (silent < c.verified[mixed::kSilentWait] ||
        silent > c.verified[mixed::kSilentWait] + c.verified[mixed::kSilentGiveUp])
        out.push_back("silent closes " + std::to_string(silent) + " outside [" +
                      std::to_string(c.verified[mixed::kSilentWait]) + ", +" +
                      std::to_string(c.verified[mixed::kSilentGiveUp]) + "]");
    // The client's FINs and resets (a reset reads as ECONNRESET or EPIPE:
    // WEIR_CLOSE_PEER), and the silent ones whichever side closed.
    uint64_t client_side = c.ends[mixed::kEndFin] + c.ends[mixed::kEndAbortHead] + c.ends[mixed::kEndAbortBody] +
                           c.ends[mixed::kEndReset] + c.verified[mixed::kSilentGiveUp] +
                           c.verified[mixed::kSilentWait];
    same("peer + io_error + silent closes vs the client's closes", m.closes[WEIR_CLOSE_PEER] +
         m.closes[WEIR_CLOSE_IO_ERROR] + silent, client_side);
    if (m.closes[WEIR_CLOSE_PEER] < c.ends[mixed::kEndReset] + c.ends[mixed::kEndAbortHead])
        out.push_back("fewer peer closes than resets and cut heads");
    for (uint32_t r : {WEIR_CLOSE_HEADER_TIMEOUT, WEIR_CLOSE_IDLE_TIMEOUT, WEIR_CLOSE_WRITE_TIMEOUT,
                       WEIR_CLOSE_OUTPUT_LIMIT, WEIR_CLOSE_MAX_CONNECTIONS, WEIR_CLOSE_SHUTDOWN, WEIR_CLOSE_HANDLER,
                       WEIR_CLOSE_RESOURCE, WEIR_CLOSE_TRANSPLANT_REFUSED})
        if (m.closes[r])
            out.push_back(std::to_string(m.closes[r]) + " closes for " + weir_close_reason_name(r) +
                          ", which the mix never calls for");
    if (m.responses < c.answers())
        out.push_back("fewer responses written than answers read");
    return out;
}

std::string closes_line(const weir_metrics &m) {
    std::string s;
    for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
        if (m.closes[r])
            s += (s.empty() ? "" : ", ") + std::string(weir_close_reason_name(r)) + " " + std::to_string(m.closes[r]);
    return s.empty() ? "none" : s;
}

} // namespace leakcheck
