// Memory that follows the load: the worker's end of lib/loop/trim.h. Runs
// once per pass after the doors (a compare on the steady path) and does its
// work at a window's end, on the worker's own thread, never inside an
// event's handling.
#include "loop/engine.h"
#include "loop/worker.h"

namespace weir {

void Worker::trim_tick() {
    if (trim_ms_ == 0) {
        metrics.set(M_MEM_POOLED_BYTES, pool_->cached_bytes());
        return;
    }
    if (trim_at_ms_ == INT64_MAX) {
        // No window open: one opens when a state is taken, so a worker whose
        // connections sit idle sets no timer and never wakes for this.
        if (pool_->peak() > 0)
            trim_at_ms_ = now_ms_ + trim_ms_;
        metrics.set(M_MEM_POOLED_BYTES, pool_->cached_bytes());
        return;
    }
    if (now_ms_ < trim_at_ms_) {
        metrics.set(M_MEM_POOLED_BYTES, pool_->cached_bytes());
        return;
    }
    size_t peak = pool_->take_peak();
    size_t keep = trim_.end_window(peak, pool_->in_use());
    size_t back = pool_->trim(keep);
    heap_freed_ += pool_->take_freed();
    bool heap = false;
    if (trim_.quiet()) {
        back += port_->trim_buffers();
        if (heap_freed_ >= kHeapTrimMin) {
            heap = heap_trim();
            heap_freed_ = 0;
        }
    }
    if (back || heap)
        metrics.add(M_MEM_TRIMS);
    if (back)
        metrics.add(M_MEM_RETURNED_BYTES, back);
    metrics.set(M_MEM_POOLED_BYTES, pool_->cached_bytes());
    // The next window, while the remembered ones still hold a load or
    // something is left to give back; else none until a state is taken.
    bool more = !trim_.quiet() || peak > 0 || pool_->in_use() > 0 || pool_->cached() > keep ||
                heap_freed_ >= kHeapTrimMin;
    trim_at_ms_ = more ? now_ms_ + trim_ms_ : INT64_MAX;
}

} // namespace weir
