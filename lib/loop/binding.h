// Deadlines that bind (issue 32): the whole-request deadline and the two
// minimum rates, a connection's clocks for them, and their judgement.
//
// The idle timers (timers.h: body, write) are re-armed by every byte, so a
// client that moves one byte just inside each wait holds its connection for
// ever. These clocks are not re-armed by progress: they charge time to the
// client only while it is the one owed something (what the connection waits
// on, ConnWait) and judge it against a budget or a rate:
//   Head, Body    the request clock (from the request's first byte, until
//                 Conn::reading() moves on to the next request);
//   Body          also the body window: bytes in per window >= min_body_rate;
//   Output        the send window: bytes out per window >= min_send_rate.
// Everything else (the host holds the request, a streamed body the host is
// not reading, an answer the host has not produced) charges nobody, which is
// what keeps a slow host from being blamed on its client.
//
// The clocks are read at every settle of the connection and judged on a
// tick (TimerKind::Bind, one duration for all, so the timer lists stay
// FIFO): a cut lands within one tick after the budget is spent. Single
// thread (the worker's).
#pragma once

#include <cstdint>

#include "loop/timers.h"
#include "proto/exchange.h"

namespace weir {

// The configured budgets, 0 where off (weir_config's WEIR_DEADLINE_OFF).
struct BindLimits {
    uint32_t request_ms = 0; // request_timeout_ms
    uint32_t body_rate = 0;  // min_body_rate, bytes/s
    uint32_t send_rate = 0;  // min_send_rate, bytes/s
    uint32_t window_ms = 10000;
    bool any() const { return request_ms || body_rate || send_rate; }
    // How often a charged connection's clocks are judged: an eighth of the
    // shortest budget, so a cut lands at most ~12 % late. 0 when all are off.
    uint32_t tick_ms() const;
    // Whether a connection that waits on w is charged by any clock.
    bool charges(ConnWait w) const;
};

enum class BindCut : uint8_t { None, Request, SlowBody, SlowReader };

// One connection's clocks.
struct Binding {
    TimerNode tick;                      // TimerKind::Bind while charged
    uint64_t in = 0, out = 0;            // bytes moved (the loop counts them)
    int64_t since_ms = 0;                // the last observe
    ConnWait was = ConnWait::FirstByte;  // what the time since then was spent on
    uint64_t request = 0;                // the Conn::reading() the request clock times
    int64_t request_ms = 0;              // charged to that request
    int64_t body_ms = 0;                 // charged to the body window
    uint64_t body_from = 0;              // `in` when the body window began
    int64_t send_ms = 0;                 // charged to the send window
    uint64_t send_from = 0;              // `out` when the send window began

    // A connection new to this worker (accepted, or moved here: a move
    // restarts its clocks, docs/reliability.md).
    void reset(uint64_t reading, int64_t now_ms);
    // Charges the time since the last observe to what the connection waited
    // on then, and records what it waits on now (reading: Conn::reading()).
    void observe(ConnWait waits, uint64_t reading, int64_t now_ms);
    // After an observe: which budget is spent, if any. A window that is met
    // starts the next one.
    BindCut judge(const BindLimits &l);
};

} // namespace weir
