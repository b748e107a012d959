// The overload manager's decision (issue 32; docs/reliability.md
// "Overload"): pure logic, no I/O, so the hysteresis is unit-tested apart
// from the loop (tests/unit/test_overload.cc).
//
// Each watermark names the point where a resource is full (100 %). The
// pressure is the fullest resource's share of its watermark, and the level
// climbs through the actions in order as the pressure passes each engage
// point, and steps down only once it falls below the lower release point of
// the level it holds (Envoy's overload manager, with hysteresis so a load
// sitting on a threshold does not flap the listener or keep-alive):
//
//   level  action (everything below it stays on)   engage   release below
//   1      keep-alive off                            80 %     70 %
//   2      accept batch shrunk                       90 %     80 %
//   3      accepting paused (the queue holds them)   95 %     85 %
//   4      new requests answered 503 + Retry-After  100 %     90 %
#pragma once

#include <cstdint>

namespace weir {

enum OverloadLevel : uint8_t {
    OVERLOAD_NONE = 0,
    OVERLOAD_NO_KEEPALIVE = 1,
    OVERLOAD_SHRINK_ACCEPT = 2,
    OVERLOAD_PAUSE_ACCEPT = 3,
    OVERLOAD_REFUSE = 4,
};
inline constexpr uint8_t kOverloadLevels = 5;

// Per mille of a watermark: where each level engages and releases.
inline constexpr uint32_t kOverloadEngage[kOverloadLevels] = {0, 800, 900, 950, 1000};
inline constexpr uint32_t kOverloadRelease[kOverloadLevels] = {0, 700, 800, 850, 900};

// A watermark of 0 is off (that resource never adds pressure).
struct OverloadMarks {
    uint64_t inflight = 0; // exchanges handed to the host, not yet answered (per worker)
    uint64_t conns = 0;    // open connections (per worker)
    uint64_t fds = 0;      // open descriptors (per process)
    uint64_t mem = 0;      // weir's connection buffer bytes (per engine)
    bool any() const { return inflight || conns || fds || mem; }
};

struct OverloadReadings {
    uint64_t inflight = 0;
    uint64_t conns = 0;
    uint64_t fds = 0;
    uint64_t mem = 0;
};

// The fullest resource, in per mille of its watermark (saturating).
uint32_t overload_pressure(const OverloadMarks &m, const OverloadReadings &r);

// The level after `level` given the pressure: up through every engage point
// passed, down through every release point fallen below.
uint8_t overload_step(uint8_t level, uint32_t pressure);

// One worker's manager: its level and what it counted.
class Overload {
  public:
    explicit Overload(const OverloadMarks &m = {}) : marks_(m) {}
    const OverloadMarks &marks() const { return marks_; }
    // Re-decides from fresh readings; returns the new level. A rise counts
    // each action it engages (engaged()).
    uint8_t update(const OverloadReadings &r);
    uint8_t level() const { return level_; }
    uint64_t engaged() const { return engaged_; }
    bool keep_alive_off() const { return level_ >= OVERLOAD_NO_KEEPALIVE; }
    bool accept_shrunk() const { return level_ >= OVERLOAD_SHRINK_ACCEPT; }
    bool accept_paused() const { return level_ >= OVERLOAD_PAUSE_ACCEPT; }
    bool refusing() const { return level_ >= OVERLOAD_REFUSE; }

  private:
    OverloadMarks marks_;
    uint8_t level_ = OVERLOAD_NONE;
    uint64_t engaged_ = 0;
};

// The accept batch at a level: accept_batch as configured below
// OVERLOAD_SHRINK_ACCEPT, then a quarter of it (at least 1; a draining
// batch, 0, becomes 4), 0 = none once accepting is paused.
uint32_t overload_batch(uint8_t level, uint32_t accept_batch);

// The process's open descriptors, counted from /proc/self/fd (-1: unreadable).
int64_t count_open_fds();

} // namespace weir
