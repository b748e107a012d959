// The overload manager's engine-wide part: the watermarks checked once, and
// the readings no single worker has (the process's descriptors, the
// engine's buffer memory). The decision itself is per worker
// (worker_overload.cc, overload.h).
#include <sys/resource.h>

#include <cerrno>

#include "loop/engine.h"
#include "loop/hooks.h"

namespace weir {

namespace {

// How stale the descriptor count may be. A count costs about 1 µs per 100
// open descriptors (count_open_fds); at 10 Hz that is 0.1 % of a core at
// 10,000 descriptors. In between, the engine adds the connections it
// accepted and takes off those it closed (overload_fd_moved), so its own
// flood is seen at once; the host's descriptors, and connections moved in
// or out, wait for the next sample.
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
    int64_t period = loop_hooks().overload_fd_sample_ms.load(std::memory_order_relaxed);
    if (period <= 0)
        period = kOverloadFdSampleMs;
    int64_t at = fds_at_ms_.load(std::memory_order_relaxed);
    if ((at == 0 || now_ms - at >= period) &&
        fds_at_ms_.compare_exchange_strong(at, now_ms > 0 ? now_ms : 1, std::memory_order_relaxed)) {
        // The drift read before the count is in it; what moves during the
        // count lands after it, to be corrected by the next sample.
        int64_t before = fds_drift_.load(std::memory_order_relaxed);
        int64_t n = count_open_fds();
        if (n >= 0) {
            fds_seen_.store(static_cast<uint64_t>(n), std::memory_order_relaxed);
            fds_drift_.fetch_sub(before, std::memory_order_relaxed);
        }
    }
    int64_t v = static_cast<int64_t>(fds_seen_.load(std::memory_order_relaxed));
    if (!loop_hooks().overload_skip_fd_drift.load(std::memory_order_relaxed)) // the arm as it was
        v += fds_drift_.load(std::memory_order_relaxed);
    return v > 0 ? static_cast<uint64_t>(v) : 0;
}

uint64_t Engine::overload_mem() const {
    uint64_t sum = 0;
    for (const auto &w : workers_)
        sum += w->metrics.get(M_OVERLOAD_MEM);
    return sum;
}

} // namespace weir
