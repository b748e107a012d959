// weir_uring_feature_name and weir_uring_tier_name: the names of what the
// io_uring probe found (weir_metrics.uring_*), for logs and weir-demo.
#include "guard.h"
#include "weir.h"

WEIR_EXPORT const char *weir_uring_feature_name(uint64_t bit) {
    static const char *const names[WEIR_URING_F_COUNT] = {
        "single_issuer",    "defer_taskrun",     "coop_taskrun",   "multishot_accept", "multishot_recv",
        "buf_ring",         "buf_ring_inc",      "recv_bundle",    "accept_dontwait",  "accept_poll_first",
        "napi",             "ext_arg",           "cqe_skip",       "nodrop",           "reg_ring_fd",
        "min_timeout",
    };
    for (unsigned i = 0; i < WEIR_URING_F_COUNT; i++)
        if (bit == (1ull << i))
            return names[i];
    return "unknown";
}

WEIR_EXPORT const char *weir_uring_tier_name(uint32_t tier) {
    switch (tier) {
    case WEIR_URING_TIER_DEFER: return "defer";
    case WEIR_URING_TIER_COOP: return "coop";
    case WEIR_URING_TIER_BASIC: return "basic";
    default: return "unknown";
    }
}
