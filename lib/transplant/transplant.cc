// weir_engine_transplant and weir_engine_switch (DESIGN.md §6, lib/transplant/
// as §1 maps it, docs/transplant.md): every worker of
// this engine is told to detach its connections, each at its next request
// boundary, to a worker of the target; the worker acts on it in its pass
// (Worker::transplant_to), and the images travel through the target's
// hand-off door, the admission path every connection takes.
#include <algorithm>
#include <cstring>

#include "loop/linger.h"
#include "loop/engine.h"

namespace weir {

int Engine::transplant(Engine *to) {
    if (!to || to == this)
        return -EINVAL;
    if (stopping() || to->stopping())
        return WEIR_E_SHUTDOWN;
    // Both listening; an inline target must be running its loops, or the
    // images would wait in its door for a start that may never come.
    if (state_ == State::Created || to->state_ == State::Created)
        return WEIR_E_STATE;
    if (to->cfg_.mode == WEIR_MODE_INLINE && to->state_ != State::Started)
        return WEIR_E_STATE;
    if (handover_claimed() || to->handover_claimed())
        return WEIR_E_STATE; // a hot upgrade moves these connections elsewhere
    Engine *expected = nullptr;
    if (!transplanting_to_.compare_exchange_strong(expected, to))
        return expected == to ? 0 : WEIR_E_STATE; // again to the same target: nothing new
    // The way back (an adaptive switch back): the opposite transplant ends
    // first, so no connection plays ping-pong; what it held parses on.
    to->end_transplant(this);
    uint32_t n = to->worker_count();
    for (uint32_t i = 0; i < worker_count(); i++)
        workers_[i]->transplant_to(to->worker(i % n));
    return 0;
}

int Engine::switch_to(Engine *to) {
    if (!to || to == this)
        return -EINVAL;
    if (state_ == State::Created || to->state_ == State::Created)
        return WEIR_E_STATE;
    if (addr_len_ != to->addr_len_ || std::memcmp(&addr_, &to->addr_, addr_len_) != 0)
        return -EINVAL; // not one port: clients would not find `to`
    // The listeners move (docs/transplant.md, "The listener moves"): worker
    // i of `to` takes worker i's socket instead of opening one, so no accept
    // queue is ever closed. A give of `to`'s not acted on yet (a switch
    // back that came first) is called off: those workers keep theirs.
    uint32_t n = linger_hooks().switch_reopens.load() ? 0 : std::min(worker_count(), to->worker_count());
    for (uint32_t i = 0; i < to->worker_count(); i++)
        to->worker(i)->give_listener_to(nullptr);
    for (uint32_t i = 0; i < n; i++)
        to->worker(i)->expect_listener();
    auto called_off = [&] {
        for (uint32_t i = 0; i < n; i++)
            to->worker(i)->listener_not_coming();
    };
    bool to_was_paused = to->pause_wanted();
    int rc = to->resume();
    if (rc < 0) {
        called_off();
        return rc;
    }
    rc = transplant(to);
    if (rc < 0) {
        called_off();
        // Aborted after `to` began accepting: a standby left active would
        // keep the clients it took, on an engine no one meant to serve. It
        // pauses again (lingering, so no handshake is reset) and sends what
        // it took back here.
        if (to_was_paused && !stopping() && !to->stopping()) {
            to->transplant(this);
            to->begin_pause();
        }
        return rc;
    }
    for (uint32_t i = 0; i < n; i++)
        workers_[i]->give_listener_to(to->worker(i));
    // Workers beyond `to`'s count have no taker: theirs linger and close.
    return begin_pause();
}

void Engine::end_transplant(Engine *into) {
    Engine *expected = into ? into : transplanting_to_.load(std::memory_order_acquire);
    if (!expected || !transplanting_to_.compare_exchange_strong(expected, nullptr))
        return;
    for (auto &w : workers_)
        w->transplant_to(nullptr);
}

} // namespace weir
