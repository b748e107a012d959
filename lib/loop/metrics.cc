#include "loop/metrics.h"

#include <cstring>

namespace weir {

void metrics_sum(const WorkerMetrics *const *workers, uint32_t n, weir_metrics *out) {
    uint64_t s[M_COUNT] = {};
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t m = 0; m < M_COUNT; m++)
            s[m] += workers[i]->get(m);
    weir_metrics full;
    std::memset(&full, 0, sizeof full);
    full.size = out->size;
    full.workers = n;
    full.accepted = s[M_ACCEPTED];
    full.accept_batches = s[M_ACCEPT_BATCHES];
    full.accept_owed = s[M_ACCEPT_OWED];
    full.accept_resource_errors = s[M_ACCEPT_RESOURCE_ERRORS];
    full.accept_other_errors = s[M_ACCEPT_OTHER_ERRORS];
    full.handoffs = s[M_HANDOFFS];
    full.handoffs_owed = s[M_HANDOFFS_OWED];
    full.connections_open = s[M_CONNECTIONS_OPEN];
    full.requests = s[M_REQUESTS];
    full.responses = s[M_RESPONSES];
    full.parse_errors = s[M_PARSE_ERRORS];
    full.continues_sent = s[M_CONTINUES_SENT];
    full.bytes_in = s[M_BYTES_IN];
    full.bytes_out = s[M_BYTES_OUT];
    full.loop_passes = s[M_LOOP_PASSES];
    full.pause_lingers = s[M_PAUSE_LINGERS];
    full.pause_closes = s[M_PAUSE_CLOSES];
    full.pause_aborts = s[M_PAUSE_ABORTS];
    full.pause_defer_clears = s[M_PAUSE_DEFER_CLEARS];
    full.pause_defer_restores = s[M_PAUSE_DEFER_RESTORES];
    full.pause_guards = s[M_PAUSE_GUARDS];
    full.pause_setsockopt_errors = s[M_PAUSE_SETSOCKOPT_ERRORS];
    full.pause_sysctl_unreadable = s[M_PAUSE_SYSCTL_UNREADABLE];
    full.pause_drain_accepted = s[M_PAUSE_DRAIN_ACCEPTED];
    full.pause_reopens = s[M_PAUSE_REOPENS];
    full.pause_reopen_errors = s[M_PAUSE_REOPEN_ERRORS];
    if (n > 0) {
        full.backend = workers[0]->backend.load(std::memory_order_relaxed);
        full.uring_tier = workers[0]->uring_tier.load(std::memory_order_relaxed);
        full.uring_probed = workers[0]->uring_probed.load(std::memory_order_relaxed);
        full.uring_used = workers[0]->uring_used.load(std::memory_order_relaxed);
    }
    full.uring_enters = s[M_URING_ENTERS];
    full.uring_cq_overflows = s[M_URING_CQ_OVERFLOWS];
    full.uring_nobufs = s[M_URING_NOBUFS];
    full.uring_rearms = s[M_URING_REARMS];
    full.transplant_detached = s[M_TRANSPLANT_DETACHED];
    full.transplant_received = s[M_TRANSPLANT_RECEIVED];
    full.uring_sq_full = s[M_URING_SQ_FULL];
    full.proxy_v1 = s[M_PROXY_V1];
    full.proxy_v2 = s[M_PROXY_V2];
    full.proxy_local = s[M_PROXY_LOCAL];
    full.proxy_missing = s[M_PROXY_MISSING];
    full.proxy_malformed = s[M_PROXY_MALFORMED];
    full.proxy_untrusted = s[M_PROXY_UNTRUSTED];
    full.proxy_oversized = s[M_PROXY_OVERSIZED];
    full.proxy_timeouts = s[M_PROXY_TIMEOUTS];
    for (uint32_t i = 0; i < n; i++)
        if (uint64_t l = workers[i]->get(M_OVERLOAD_LEVEL); l > full.overload_level)
            full.overload_level = l;
    full.overload_engaged = s[M_OVERLOAD_ENGAGED];
    full.overload_keepalive_off = s[M_OVERLOAD_KEEPALIVE_OFF];
    full.overload_accept_shrunk = s[M_OVERLOAD_ACCEPT_SHRUNK];
    full.overload_accept_pauses = s[M_OVERLOAD_ACCEPT_PAUSES];
    full.overload_refused = s[M_OVERLOAD_REFUSED];
    full.mem_pooled_bytes = s[M_MEM_POOLED_BYTES];
    full.mem_returned_bytes = s[M_MEM_RETURNED_BYTES];
    full.mem_trims = s[M_MEM_TRIMS];
    full.overload_idle_closed = s[M_OVERLOAD_IDLE_CLOSED];
    full.h2_sessions = s[M_H2_SESSIONS];
    full.h2_upgrades = s[M_H2_UPGRADES];
    full.h2_streams = s[M_H2_STREAMS];
    full.h2_resets_by_peer = s[M_H2_RESETS_BY_PEER];
    full.h2_refused = s[M_H2_REFUSED];
    full.h2_malformed = s[M_H2_MALFORMED];
    full.h2_floods = s[M_H2_FLOODS];
    full.h2_handler_timeouts = s[M_H2_HANDLER_TIMEOUTS];
    for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
        full.closes[r] = s[M_CLOSES + r];
    size_t len = out->size < sizeof full ? out->size : sizeof full;
    std::memcpy(out, &full, len);
}

} // namespace weir
