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
    // The buffer trim's rule (UringPort::trim_buffers) switched off: it
    // drops the buffers' pages on any tier while recvs are armed (the arm
    // that must lose), and a sleep inside its check-to-madvise window, which
    // a recv's completion can fall into only where task work runs at any
    // return to user mode (COOP, basic).
    std::atomic<bool> trim_any_tier{false};
    std::atomic<uint32_t> trim_window_us{0};
};
UringHooks &uring_hooks();

} // namespace weir
