// The accept batch (DESIGN.md §4): the bookkeeping of a worker's doors, kept
// apart from any I/O so both backends share it and unit tests can drive it.
//
// A door is a listener or the hand-off queue through which siblings pass
// connections. The event loop only records that a door is ready; once the
// pass's other events ran, the worker runs at most one batch per door.
//   - ready:  an edge (or a wake) was seen since the last batch.
//   - owed:   the last batch stopped because it hit its size, not because the
//             door ran dry; the next pass runs a batch with no new event, and
//             the wait does not block while it is set.
//   - resource_wait: the last batch stopped on EMFILE/ENFILE/ENOBUFS/ENOMEM.
//             Never owed (that would spin); the worker caps its wait at a
//             retry interval and runs the door again when the interval is up,
//             because an edge-triggered listener will not report the backlog
//             it still holds.
#pragma once

#include <cstdint>

namespace weir {

enum class Take : uint8_t {
    Took,     // one connection admitted (or refused and closed: it left the door)
    Empty,    // EAGAIN: the door ran dry
    Resource, // EMFILE, ENFILE, ENOBUFS, ENOMEM
    Other,    // another error for this one connection (ECONNABORTED, EPERM, ...)
};

struct Door {
    bool ready = false;
    bool owed = false;
    bool resource_wait = false;
    int64_t retry_at_ms = 0; // when resource_wait: the next try
};

struct BatchResult {
    bool ran = false;
    bool was_owed = false; // ran with no new event, because the last batch was owed
    uint32_t taken = 0;
    uint32_t resource_errors = 0;
    uint32_t other_errors = 0;
};

// Whether the door has a batch to run this pass.
inline bool door_due(const Door &d, int64_t now_ms) {
    return d.ready || d.owed || (d.resource_wait && now_ms >= d.retry_at_ms);
}

// Runs one batch of at most limit takes (0 = until the door runs dry) if the
// door is due. take() is called once per attempt. Errors for one connection
// count against the batch so a stream of them cannot hold the loop.
template <typename F>
BatchResult run_batch(Door &d, uint32_t limit, int64_t now_ms, uint32_t retry_ms, F &&take) {
    BatchResult r;
    if (!door_due(d, now_ms))
        return r;
    r.ran = true;
    r.was_owed = d.owed && !d.ready;
    d.ready = false;
    d.owed = false;
    d.resource_wait = false;
    for (uint32_t attempts = 0;; attempts++) {
        if (limit != 0 && attempts == limit) {
            d.owed = true; // the batch, not the door, stopped the drain
            break;
        }
        Take t = take();
        if (t == Take::Took) {
            r.taken++;
        } else if (t == Take::Empty) {
            break;
        } else if (t == Take::Resource) {
            r.resource_errors++;
            d.resource_wait = true;
            d.retry_at_ms = now_ms + retry_ms;
            break;
        } else {
            r.other_errors++;
        }
    }
    return r;
}

// Shutdown: whatever was recorded or owed is forgotten.
inline void door_clear(Door &d) { d = Door{}; }

} // namespace weir
