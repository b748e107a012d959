/*
 * demo_metrics.h — the lines SIGHUP prints for one engine's weir_metrics, in
 * the order weir.h declares them: the block between weir-demo's "metrics
 * begin" and "metrics end" that the tests and the benchmarks read.
 */
#ifndef WEIR_DEMO_METRICS_H
#define WEIR_DEMO_METRICS_H

#include <stdio.h>
#include <string.h>

#include "weir.h"

static void demo_print_engine_metrics(const weir_metrics *m) {
#define F(x) printf("%s %llu\n", #x, (unsigned long long)m->x)
    F(workers);
    F(accepted);
    F(accept_batches);
    F(accept_owed);
    F(accept_resource_errors);
    F(accept_other_errors);
    F(handoffs);
    F(handoffs_owed);
    F(connections_open);
    F(requests);
    F(responses);
    F(parse_errors);
    F(continues_sent);
    F(bytes_in);
    F(bytes_out);
    F(loop_passes);
    F(pause_lingers);
    F(pause_closes);
    F(pause_aborts);
    F(pause_defer_clears);
    F(pause_defer_restores);
    F(pause_guards);
    F(pause_setsockopt_errors);
    F(pause_sysctl_unreadable);
    F(pause_drain_accepted);
    F(pause_reopens);
    F(pause_reopen_errors);
    printf("backend %s\n", weir_backend_name(m->backend) ? weir_backend_name(m->backend) : "?");
    if (m->backend == WEIR_BACKEND_URING) {
        printf("uring_tier %s\n", weir_uring_tier_name(m->uring_tier));
        for (unsigned i = 0; i < WEIR_URING_F_COUNT; i++) {
            uint64_t bit = 1ull << i;
            if (m->uring_probed & bit)
                printf("uring_feature.%s %s\n", weir_uring_feature_name(bit),
                       (m->uring_used & bit) ? "used" : "probed");
        }
    }
    F(uring_enters);
    F(uring_cq_overflows);
    F(uring_nobufs);
    F(uring_rearms);
    F(transplant_detached);
    F(transplant_adopted);
    F(transplant_refused);
    F(transplant_in_flight);
    F(transplant_received);
    F(close_lingers);
    F(close_linger_cuts);
    F(uring_sq_full);
    F(proxy_v1);
    F(proxy_v2);
    F(proxy_local);
    F(proxy_missing);
    F(proxy_malformed);
    F(proxy_untrusted);
    F(proxy_oversized);
    F(proxy_timeouts);
    F(overload_level);
    F(overload_engaged);
    F(overload_keepalive_off);
    F(overload_accept_shrunk);
    F(overload_accept_pauses);
    F(overload_refused);
    F(mem_pooled_bytes);
    F(mem_returned_bytes);
    F(mem_trims);
    F(overload_idle_closed);
    F(h2_sessions);
    F(h2_upgrades);
    F(h2_streams);
    F(h2_resets_by_peer);
    F(h2_refused);
    F(h2_malformed);
    F(h2_floods);
    F(h2_handler_timeouts);
#undef F
    for (uint32_t i = 0; i < WEIR_CLOSE_REASONS; i++) {
        const char *name = weir_close_reason_name(i);
        if (strcmp(name, "unknown") != 0 || m->closes[i] != 0)
            printf("closes.%s %llu\n", strcmp(name, "unknown") ? name : "unknown", (unsigned long long)m->closes[i]);
    }
}

#endif /* WEIR_DEMO_METRICS_H */
