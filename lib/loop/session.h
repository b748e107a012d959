// The protocol seam (docs/DESIGN.md §2b), as the loop makes its calls: what
// the loop asks of one connection's protocol and what it leaves to it. The
// loop keeps the timer lists, the settle and the closing; the session says
// which deadline it is under and what passing it means in its protocol.
//
// The slot holds a Session (proto/session.h): HTTP/1's Conn or HTTP/2's
// H2Session behind a one-byte tag, HTTP/1's case inline, so the seam costs
// nothing on the hot path (bench/callgrind_h1.py). This file is the loop's
// side of the deadlines: which timer kind a session's wait arms, and what
// the loop does when one passes (session_timer, session_expire) or when a
// deadline that binds cuts (session_cut, session_reading). Every session
// call the loop makes is placed in §2b (tests/scripts/layers.sh).
#pragma once

#include <cstdint>

#include "loop/binding.h"
#include "loop/timers.h"
#include "proto/session.h"
#include "weir.h"

namespace weir {

// What the session waits for, in the loop's timer kinds. None: no deadline
// of its own (it is done; the Done case is the close path's).
inline TimerKind session_timer(ConnWait w) {
    switch (w) {
    case ConnWait::FirstByte: // one deadline from the start to the end of the head
    case ConnWait::Head:
        return TimerKind::Head;
    case ConnWait::Body:
        return TimerKind::Body;
    case ConnWait::Idle:
        return TimerKind::Idle;
    case ConnWait::Output:
        return TimerKind::Output;
    case ConnWait::Handler:
        return TimerKind::Handler;
    case ConnWait::Proxy: // one deadline from the accept to the PROXY header's end
        return TimerKind::Proxy;
    default:
        return TimerKind::None;
    }
}

// A deadline of the session's own passed: kind k, the one session_timer
// named for its present wait (the loop checks that first; the handler
// deadline is the exchanges', not this). The session acts as its protocol
// says and returns 0 when the loop should settle it (what it did shows in
// its output and its wait), or the WEIR_CLOSE_* reason the loop closes it
// with at once. HTTP/1: a head or body that began gets a 408 and a
// lingering close, a connection that never sent a byte a silent one; an
// idle keep-alive connection and a reader that takes nothing close at once.
inline uint32_t session_expire(Session &s, TimerKind k) {
    switch (k) {
    case TimerKind::Proxy:
        s.expire_proxy(); // 408 for part of a header, silence for none
        return 0;
    case TimerKind::Head:
        s.expire_input(WEIR_CLOSE_HEADER_TIMEOUT);
        return 0;
    case TimerKind::Body:
        s.expire_input(WEIR_CLOSE_BODY_TIMEOUT);
        return 0;
    case TimerKind::Idle:
        s.close(WEIR_CLOSE_IDLE_TIMEOUT);
        return WEIR_CLOSE_IDLE_TIMEOUT;
    case TimerKind::Output:
        s.close(WEIR_CLOSE_WRITE_TIMEOUT);
        return WEIR_CLOSE_WRITE_TIMEOUT;
    default:
        return 0; // not a deadline of the session's (Handler, Bind, None)
    }
}

// The bytes the session has read of its present request: the clock the
// deadlines that bind time a request by (binding.h).
inline uint64_t session_reading(const Session &s) { return s.reading(); }

// A deadline that binds cut the client (binding.h judged it): the same
// contract as session_expire. A request or body cut before any answer to
// it began is answered 408 (a streamed body's request is the host's: its
// body read says -ETIMEDOUT, the host answers, then the connection closes);
// a reader too slow once part of an answer has left can be told nothing.
inline uint32_t session_cut(Session &s, BindCut cut) {
    switch (cut) {
    case BindCut::Request:
        s.expire_input(WEIR_CLOSE_REQUEST_TIMEOUT);
        return 0;
    case BindCut::SlowBody:
        s.expire_input(WEIR_CLOSE_SLOW_BODY);
        return 0;
    case BindCut::SlowReader:
        s.close(WEIR_CLOSE_SLOW_READER);
        return WEIR_CLOSE_SLOW_READER;
    case BindCut::None:
        break;
    }
    return 0;
}

} // namespace weir
