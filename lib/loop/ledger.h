// Transplant's ledger: what moving images between engines counts and the
// way back for a refused image. Its own header because the engine, the
// worker's doors, a handover's sender and systemd's fd store all share it
// and none of them needs the worker for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace weir {

// Transplant's ledger, kept by the source engine and shared with the images
// it sent (the target counts into it from its own thread; an image may
// outlive its source engine).
struct Ledger {
    std::atomic<uint64_t> adopted{0};
    std::atomic<uint64_t> refused{0};
    // The way back for an image the target refuses: its source worker, while
    // the source engine lives. The destructor clears source_alive under mu,
    // so no image is posted to a worker that is going away.
    std::mutex mu;
    bool source_alive = true;
};

} // namespace weir
