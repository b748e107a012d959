// Memory that follows the load: how much of a burst's memory a worker keeps
// once the burst has passed (docs/reliability.md "Memory after a burst").
//
// A burst of connections that each need a state at once (their read buffer,
// exchange ring, header views, output segment) leaves the pool full and
// glibc's free lists holding the rest; idle keep-alive connections then cost
// several times what a gentle arrival leaves. The worker asks this policy,
// once per window (cfg.trim_interval_ms), how many idle states to keep:
// enough for the busiest moment of the last kWindows windows, plus kSlack.
// The windows' memory is the hysteresis: a load that swings keeps its
// states as long as it swings at least once every few windows, and only a
// burst that is over for kWindows whole windows gives its memory back.
// Pure: no clock, no allocation (tests/unit/loop/test_trim.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace weir {

class TrimPolicy {
  public:
    static constexpr uint32_t kWindows = 3;
    // States kept past the remembered peak while the windows hold a load
    // (a peak above kSlack): the next few connections of a busy worker find
    // one. A quiet worker keeps only what its quiet peaks used: the slack
    // on top of that was 8 idle states (about 460 KiB) that a gentle
    // arrival never builds up, and that alone was most of what idle
    // connections cost more after a burst than after a gentle arrival
    // (docs/reliability.md "Memory after a burst").
    static constexpr size_t kSlack = 8;

    // One window ended: peak states were held at once during it, in_use are
    // held now. Returns how many idle states the pool may keep.
    size_t end_window(size_t peak, size_t in_use) {
        peaks_[at_] = peak;
        at_ = (at_ + 1) % kWindows;
        size_t hi = 0;
        for (size_t p : peaks_)
            hi = p > hi ? p : hi;
        return (hi > in_use ? hi - in_use : 0) + (hi > kSlack ? kSlack : 0);
    }
    // Every remembered window was quiet (nothing past kSlack held at once):
    // the moment to give back what no connection holds (io_uring's provided
    // buffers, the heap's free pages) without doing it under a load.
    bool quiet() const {
        for (size_t p : peaks_)
            if (p > kSlack)
                return false;
        return true;
    }

  private:
    size_t peaks_[kWindows] = {};
    uint32_t at_ = 0;
};

// Gives the allocator's free pages back to the kernel (glibc's malloc_trim:
// every arena, free pages inside the heap included, not only its top).
// Costs a walk of the heap, so the worker calls it on a window's end and
// only after it freed at least kHeapTrimMin since the last call. false where
// the C library has no such call.
bool heap_trim();
inline constexpr size_t kHeapTrimMin = 256 * 1024;

} // namespace weir
