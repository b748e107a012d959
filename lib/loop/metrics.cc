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
    for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
        full.closes[r] = s[M_CLOSES + r];
    size_t len = out->size < sizeof full ? out->size : sizeof full;
    std::memcpy(out, &full, len);
}

} // namespace weir
