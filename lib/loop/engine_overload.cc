// The overload manager's engine-wide part: the watermarks checked once, and
// the readings no single worker has (the process's descriptors, the
// engine's buffer memory). The decision itself is per worker
// (worker_overload.cc, overload.h).
#include <sys/resource.h>

#include <cerrno>

#include "loop/engine.h"

namespace weir {

namespace {

// How stale the descriptor count may be. A count costs about 1 µs per 100
// open descriptors (count_open_fds); at 10 Hz that is 0.1 % of a core at
// 10,000 descriptors, and an accept batch admits at most 16 per pass in
// between, so the reading lags by what a few passes open.
constexpr int64_t kOverloadFdSampleMs = 100;

constexpr uint64_t kMaxMemMb = 4u << 20; // 4 TiB: past it a value is a mistake

} // namespace

int Engine::set_overload(const weir_config &c) {
    OverloadMarks m;
    m.inflight = c.overload_inflight;
    m.conns = c.overload_conns;
    if (m.conns > c.max_connections)
        return -EINVAL; // max_connections answers first: the watermark could never be reached
    m.fds = c.overload_fds;
    if (m.fds) {
        rlimit rl{};
        if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && m.fds > rl.rlim_max)
            return -EINVAL;
    }
    if (c.overload_mem_mb > kMaxMemMb)
        return -EINVAL;
    m.mem = static_cast<uint64_t>(c.overload_mem_mb) << 20;
    overload_marks_ = m;
    return 0;
}

uint64_t Engine::overload_fds(int64_t now_ms) {
    int64_t at = fds_at_ms_.load(std::memory_order_relaxed);
    if (now_ms - at >= kOverloadFdSampleMs &&
        fds_at_ms_.compare_exchange_strong(at, now_ms, std::memory_order_relaxed)) {
        int64_t n = count_open_fds();
        if (n >= 0)
            fds_seen_.store(static_cast<uint64_t>(n), std::memory_order_relaxed);
    }
    return fds_seen_.load(std::memory_order_relaxed);
}

uint64_t Engine::overload_mem() const {
    uint64_t sum = 0;
    for (const auto &w : workers_)
        sum += w->metrics.get(M_OVERLOAD_MEM);
    return sum;
}

} // namespace weir
