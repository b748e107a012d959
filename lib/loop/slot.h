// One connection's place in its worker: the shared part every backend sees
// (the session, the flags the settle reads, the timer and the deadlines, the
// links of the worker's lists) and the backend's own bytes (port_state).
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <new>

#include "loop/binding.h"
#include "loop/image_sink.h"
#include "loop/port.h"
#include "loop/timers.h"
#include "proto/session.h"
#include "util/peer_addr.h"

namespace weir {

class Worker;

// One connection's place in its worker. Slots live in fixed chunks so their
// addresses (given to the backend as operation tags and to exchanges as
// Exchange::user) never move.
struct Slot {
    alignas(Session) unsigned char mem[sizeof(Session)];
    Session &session() { return *std::launder(reinterpret_cast<Session *>(mem)); }

    Worker *worker = nullptr; // fixed at creation: foreign threads read it
    int fd = -1;              // -1: closed or released (a zombie while anything is out)
    uint16_t ops = 0;         // kernel operations in flight that name this slot
    bool in_use = false;
    bool dirty = false;        // on the worker's settle list
    bool input_paused = false; // the Conn had no room: the port waits for want_read()
    bool retry_queued = false;
    bool eof = false;
    bool broken = false;       // a read or write error: close once settled
    bool activity = false;     // bytes moved since the last settle
    bool progress = false;     // output bytes written since the last settle
    bool answered = false;     // an answer was applied since the last settle (handler timer)
    std::atomic<bool> gone{false}; // fd closed: foreign answers are dropped
    std::atomic<bool> peer_left{false}; // the peer's FIN (or a read error) came: weir_exchange_gone
    bool gone_reported = false;    // cfg.report_gone: what was out has been handed back
    ProxyResult proxy_counted = ProxyResult::None; // the PROXY outcome metrics hold (fold)
    TimerNode timer;
    TimerNode held_timer;     // TimerKind::Held: the oldest held exchange's handler deadline (HTTP/2)
    Binding bind;             // the deadlines that bind (binding.h, worker_binding.cc)
    Slot *next_dirty = nullptr;
    Slot *prev_dirty = nullptr;
    Slot *next_retry = nullptr;
    Slot *live_prev = nullptr;
    Slot *live_next = nullptr;
    Slot *next_free = nullptr;
    ImageNode *leaving = nullptr; // detached: handed over once no operation is in flight
    ImageSink *leaving_to = nullptr;
    uint64_t upgrade_handle = 0;  // answered 101: leaves for the host (worker_upgrade.cc)
    uint64_t body_handle = 0;     // the host waits for this exchange's body (worker_body.cc)
    PeerAddr peer;            // the socket's, or a PROXY header's source
    SessionCounters folded{};
    alignas(8) unsigned char port[kPortSlotBytes]; // the backend's own (port_state)
};

// The backend's view of its part of a slot.
template <class T> T &port_state(Slot &s) {
    static_assert(sizeof(T) <= kPortSlotBytes && alignof(T) <= 8, "grow kPortSlotBytes");
    return *std::launder(reinterpret_cast<T *>(s.port));
}

} // namespace weir
