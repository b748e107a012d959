// The io_uring backend's port (lib/loop/port.h), docs/uring.md: multishot
// accept, multishot recv into a provided-buffer ring, sends from the
// connection's stable output segments, one submit-and-wait per pass.
#pragma once

#include <atomic>
#include <memory>

#include "loop/port.h"

namespace weir {

// 0 and *out, WEIR_E_UNAVAILABLE (this kernel lacks what the port needs; the
// reason is in uring_caps().missing), -ENOMEM.
int make_uring_port(std::unique_ptr<Port> *out);

// Test hooks (never set outside tests).
struct UringHooks {
    // Ring setup fails with ENOMEM, as under a RLIMIT_MEMLOCK that cannot
    // fund it (kernels that charge rings to it).
    std::atomic<bool> setup_enomem{false};
    // The next pass cancels the multishot accept, as the kernel ends one
    // whose CQE it cannot post (a full CQ): it must be re-armed.
    std::atomic<bool> end_accept{false};
    // Buffers per worker's ring (power of two; 0: the default).
    std::atomic<uint32_t> buffers{0};
    // Counts, for tests: waits that gathered, and waits that could have (the
    // kernel has the feature) but did not because the last pass was light.
    std::atomic<uint64_t> gathers{0}, plain_waits{0};
    // SQ entries per worker's ring (power of two; 0: the default), so a
    // pass fills its SQ and submits early.
    std::atomic<uint32_t> sq_entries{0};
};
UringHooks &uring_hooks();

} // namespace weir
