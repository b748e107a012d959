// weir_engine_transplant (DESIGN.md §6, docs/transplant.md): every worker of
// this engine is told to detach its connections, each at its next request
// boundary, to a worker of the target; the worker acts on it in its pass
// (Worker::transplant_to), and the images travel through the target's
// hand-off door, the admission path every connection takes.
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
    if (transplanting_.exchange(true))
        return WEIR_E_STATE;
    uint32_t n = to->worker_count();
    for (uint32_t i = 0; i < worker_count(); i++)
        workers_[i]->transplant_to(to->worker(i % n));
    return 0;
}

} // namespace weir
