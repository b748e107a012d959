// Per-worker counters: written by the worker's thread only (a relaxed load and
// store, no locked instruction on the hot path), read from any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "weir.h"

namespace weir {

enum Metric : uint32_t {
    M_ACCEPTED,
    M_ACCEPT_BATCHES,
    M_ACCEPT_OWED,
    M_ACCEPT_RESOURCE_ERRORS,
    M_ACCEPT_OTHER_ERRORS,
    M_HANDOFFS,
    M_HANDOFFS_OWED,
    M_CONNECTIONS_OPEN,
    M_REQUESTS,
    M_RESPONSES,
    M_PARSE_ERRORS,
    M_CONTINUES_SENT,
    M_BYTES_IN,
    M_BYTES_OUT,
    M_LOOP_PASSES,
    M_PAUSE_LINGERS,
    M_PAUSE_CLOSES,
    M_PAUSE_ABORTS,
    M_PAUSE_DEFER_CLEARS,
    M_PAUSE_DEFER_RESTORES,
    M_PAUSE_GUARDS,
    M_PAUSE_SETSOCKOPT_ERRORS,
    M_PAUSE_SYSCTL_UNREADABLE,
    M_PAUSE_DRAIN_ACCEPTED,
    M_PAUSE_REOPENS,
    M_PAUSE_REOPEN_ERRORS,
    M_URING_ENTERS,
    M_URING_CQ_OVERFLOWS,
    M_URING_NOBUFS,
    M_URING_REARMS,
    M_TRANSPLANT_DETACHED,
    M_TRANSPLANT_RECEIVED,
    M_URING_SQ_FULL,
    // The PROXY protocol (conn_proxy.cc's counts, folded per connection).
    M_PROXY_V1,
    M_PROXY_V2,
    M_PROXY_LOCAL,
    M_PROXY_MISSING,
    M_PROXY_MALFORMED,
    M_PROXY_UNTRUSTED,
    M_PROXY_OVERSIZED,
    M_PROXY_TIMEOUTS,
    // The overload manager (worker_overload.cc). LEVEL and MEM are gauges:
    // metrics_sum takes the highest level, and the engine sums MEM itself.
    M_OVERLOAD_LEVEL,
    M_OVERLOAD_ENGAGED,
    M_OVERLOAD_KEEPALIVE_OFF,
    M_OVERLOAD_ACCEPT_SHRUNK,
    M_OVERLOAD_ACCEPT_PAUSES,
    M_OVERLOAD_REFUSED,
    M_OVERLOAD_MEM,
    M_OVERLOAD_IDLE_CLOSED,
    M_MEM_POOLED_BYTES, // a gauge (set)
    M_MEM_RETURNED_BYTES,
    M_MEM_TRIMS,
    // HTTP/2 (fold_h2 in worker_conns.cc).
    M_H2_SESSIONS,
    M_H2_UPGRADES,
    M_H2_STREAMS,
    M_H2_RESETS_BY_PEER,
    M_H2_REFUSED,
    M_H2_MALFORMED,
    M_H2_FLOODS,
    M_H2_HANDLER_TIMEOUTS,
    M_CLOSES, // WEIR_CLOSE_REASONS entries follow
    M_COUNT = M_CLOSES + WEIR_CLOSE_REASONS,
};

struct WorkerMetrics {
    std::atomic<uint64_t> v[M_COUNT] = {};
    // What the port runs on, set once by its init (not sums).
    std::atomic<uint32_t> backend{0}, uring_tier{0};
    std::atomic<uint64_t> uring_probed{0}, uring_used{0};

    // Owner thread only.
    void add(uint32_t m, uint64_t n = 1) { v[m].store(v[m].load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    void set(uint32_t m, uint64_t n) { v[m].store(n, std::memory_order_relaxed); }
    void sub(uint32_t m, uint64_t n = 1) { v[m].store(v[m].load(std::memory_order_relaxed) - n, std::memory_order_relaxed); }
    void close(uint32_t reason) { add(M_CLOSES + (reason < WEIR_CLOSE_REASONS ? reason : WEIR_CLOSE_IO_ERROR)); }
    // Any thread.
    uint64_t get(uint32_t m) const { return v[m].load(std::memory_order_relaxed); }
};

// Sums workers' counters into out, honouring out->size (fields past it are
// left alone). Any thread.
void metrics_sum(const WorkerMetrics *const *workers, uint32_t n, weir_metrics *out);

} // namespace weir
