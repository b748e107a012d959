#include "loop/binding.h"

namespace weir {

uint32_t BindLimits::tick_ms() const {
    uint32_t shortest = 0;
    if (request_ms)
        shortest = request_ms;
    if ((body_rate || send_rate) && (!shortest || window_ms < shortest))
        shortest = window_ms;
    if (!shortest)
        return 0;
    return shortest / 8 ? shortest / 8 : 1;
}

bool BindLimits::charges(ConnWait w) const {
    switch (w) {
    case ConnWait::Head:
        return request_ms != 0;
    case ConnWait::Body:
        return request_ms != 0 || body_rate != 0;
    case ConnWait::Output:
        return send_rate != 0;
    default:
        return false;
    }
}

void Binding::reset(uint64_t reading, int64_t now_ms) {
    in = out = 0;
    since_ms = now_ms;
    was = ConnWait::FirstByte;
    request = reading;
    request_ms = body_ms = send_ms = 0;
    body_from = send_from = 0;
}

void Binding::observe(ConnWait waits, uint64_t reading, int64_t now_ms) {
    int64_t dt = now_ms > since_ms ? now_ms - since_ms : 0;
    switch (was) {
    case ConnWait::Head:
        request_ms += dt;
        break;
    case ConnWait::Body:
        request_ms += dt;
        body_ms += dt;
        break;
    case ConnWait::Output:
        send_ms += dt;
        break;
    default:
        break; // the host's time, or nobody's
    }
    since_ms = now_ms;
    if (reading != request) {
        // The request arrived whole: the next one starts with a full budget.
        request = reading;
        request_ms = body_ms = 0;
        body_from = in;
    }
    was = waits;
}

namespace {

// Whether bytes moved in ms keep up with rate bytes/s (no overflow: bytes
// and ms are at most 2^64 / 2^32 in any window a connection lives through).
bool too_slow(uint64_t bytes, int64_t ms, uint32_t rate) {
    return static_cast<unsigned __int128>(bytes) * 1000 < static_cast<unsigned __int128>(rate) * static_cast<uint64_t>(ms);
}

} // namespace

BindCut Binding::judge(const BindLimits &l) {
    bool reading_request = was == ConnWait::Head || was == ConnWait::Body;
    if (l.request_ms && reading_request && request_ms >= l.request_ms)
        return BindCut::Request;
    if (l.body_rate && was == ConnWait::Body && body_ms >= l.window_ms) {
        if (too_slow(in - body_from, body_ms, l.body_rate))
            return BindCut::SlowBody;
        body_ms = 0;
        body_from = in;
    }
    if (l.send_rate && was == ConnWait::Output && send_ms >= l.window_ms) {
        if (too_slow(out - send_from, send_ms, l.send_rate))
            return BindCut::SlowReader;
        send_ms = 0;
        send_from = out;
    }
    return BindCut::None;
}

} // namespace weir
