// Connection timers: one FIFO list per timeout kind.
//
// Every timer of a kind has the same duration (idle, header, write timeout), so
// arming one appends it at the tail with deadline now + duration and each list
// stays sorted by deadline without any search: arm, disarm and expiry are O(1)
// per timer, and the next deadline is the smallest of the list heads. This is
// a timer wheel with one slot per duration; it needs no tick and no timerfd, and
// the loop's wait is simply capped at the earliest head (Timers::next_deadline).
// An io_uring backend uses the same lists with a timeout SQE or the same cap.
// Single thread (the worker's).
#pragma once

#include <cstdint>

namespace weir {

// Bind: the tick on which a connection's binding deadlines are judged (binding.h).
// Held: the handler deadline of a session whose exchanges expire one by one
// (HTTP/2's streams: Worker::expire_held), the oldest held exchange's.
enum class TimerKind : uint8_t { None = 0, Idle, Head, Body, Output, Handler, Proxy, Bind, Held, Count };

struct TimerNode {
    TimerNode *prev = nullptr;
    TimerNode *next = nullptr;
    int64_t deadline_ms = 0;
    TimerKind kind = TimerKind::None;
    void *owner = nullptr; // the user's object (a connection slot)
};

class Timers {
  public:
    // duration of each kind in ms; 0 disables that kind (never fires).
    void set_duration(TimerKind k, uint32_t ms) { dur_[idx(k)] = ms; }
    uint32_t duration(TimerKind k) const { return dur_[idx(k)]; }

    // (Re)arms n for kind k at now + duration(k). A disabled kind disarms.
    void arm(TimerNode &n, TimerKind k, int64_t now_ms);
    // (Re)arms n for kind k at deadline, which may be earlier than the
    // kind's newest (a deadline counted from an older moment): the list
    // stays sorted by a walk from its tail. For the rare re-arms of Held,
    // never for the per-request kinds.
    void arm_at(TimerNode &n, TimerKind k, int64_t deadline_ms);
    void disarm(TimerNode &n);
    bool armed(const TimerNode &n) const { return n.kind != TimerKind::None; }

    // The first expired timer (deadline <= now), disarmed, or nullptr; *fired
    // tells which kind it was armed for.
    TimerNode *pop_expired(int64_t now_ms, TimerKind *fired);
    // The earliest deadline, or INT64_MAX when nothing is armed.
    int64_t next_deadline() const;
    uint64_t size() const { return size_; }

  private:
    static int idx(TimerKind k) { return static_cast<int>(k); }
    struct List {
        TimerNode *head = nullptr;
        TimerNode *tail = nullptr;
    };
    List lists_[static_cast<int>(TimerKind::Count)];
    uint32_t dur_[static_cast<int>(TimerKind::Count)] = {};
    uint64_t size_ = 0;
};

} // namespace weir
