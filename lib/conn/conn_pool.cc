// Conn states and the per-worker pool that keeps them between connections.
#include <cstdlib>
#include <new>

#include "conn/conn_state.h"

namespace weir {

using namespace conn_detail;

bool Conn::State::init() {
    cap = block_size();
    block = static_cast<char *>(std::malloc(cap));
    buf = block;
    nslots = cfg.max_pipeline ? cfg.max_pipeline : 1;
    slots = new (std::nothrow) ExSlot[nslots];
    uint32_t per = cfg.limits.max_headers + cfg.limits.max_trailers;
    arena_cap = 2 * per > 8 * nslots ? 2 * per : 8 * nslots;
    arena = new (std::nothrow) weir_header_t[arena_cap];
    return block && slots && arena;
}

Conn::State::~State() {
    if (buf != block)
        std::free(buf);
    std::free(block);
    delete[] slots;
    delete[] arena;
}

void Conn::State::reset() {
    if (buf != block) {
        std::free(buf);
        buf = block;
        cap = block_size();
    }
    parse_pos = end = 0;
    phase = kHead;
    cont_pending = false;
    body_wait = cont_done = false;
    // Keep-alive connections come back here after every answer: touch
    // only the slots used since the last reset (sequences start at 0).
    // Slots that kept a buffer from an earlier reset count against the
    // budget too, so the scan covers them.
    uint32_t used = parse_seq < nslots ? parse_seq : nslots;
    uint32_t scan = used > answers_hi ? used : answers_hi;
    size_t budget = kKeptAnswerBytes;
    answers_hi = 0;
    for (uint32_t i = 0; i < scan; ++i) {
        if (i < used)
            slots[i].state = kFree;
        Bytes &a = slots[i].answer;
        a.shrink_to(budget);
        if (a.cap) {
            budget -= a.cap;
            answers_hi = i + 1;
        }
    }
    write_seq = take_seq = parse_seq = taken = streams = 0;
    arena_pos = arena_cur = 0;
    out.clear();
}

size_t Conn::State::bytes() const {
    size_t n = sizeof(State) + cap + nslots * sizeof(ExSlot) + arena_cap * sizeof(weir_header_t) + out.held_bytes();
    for (uint32_t i = 0; i < answers_hi; ++i)
        n += slots[i].answer.cap;
    return n;
}

ConnHooks &conn_hooks() {
    static ConnHooks hooks;
    return hooks;
}

ConnImage::~ConnImage() { std::free(unread); }

ConnPool::ConnPool(const ConnSettings &settings) : settings_(settings) {}

ConnPool::~ConnPool() {
    while (free_) {
        Conn::State *n = free_->next_free;
        delete free_;
        free_ = n;
    }
}

size_t ConnPool::cached() const { return cached_; }

size_t ConnPool::bytes() const {
    return (in_use_ + cached_) * (sizeof(Conn::State) + settings_.read_buffer_size) + segs_.bytes();
}

size_t ConnPool::kept_answer_bytes() const {
    size_t n = 0;
    for (const Conn::State *s = free_; s; s = s->next_free)
        for (uint32_t i = 0; i < s->nslots; ++i)
            n += s->slots[i].answer.cap;
    return n;
}

Conn::State *ConnPool::take() {
    if (free_) {
        Conn::State *s = free_;
        free_ = s->next_free;
        --cached_;
        s->next_free = nullptr;
        cached_bytes_ -= s->pooled_bytes;
        if (++in_use_ > peak_)
            peak_ = in_use_;
        return s;
    }
    Conn::State *s = new (std::nothrow) Conn::State(settings_, segs_);
    if (s && !s->init()) {
        delete s;
        s = nullptr;
    }
    if (!s && conn_hooks().alloc_throws.load(std::memory_order_relaxed))
        throw std::bad_alloc(); // the arm that must lose (ConnHooks)
    if (s && ++in_use_ > peak_)
        peak_ = in_use_;
    return s;
}

void ConnPool::give(Conn::State *s) {
    --in_use_;
    s->reset();
    // A burst of active connections should not pin its memory forever:
    // past 256 at once, and then by the trim (lib/loop/trim.h) down to
    // what the recent load held.
    if (cached_ >= 256) {
        freed_ += s->bytes();
        delete s;
        return;
    }
    s->pooled_bytes = s->bytes();
    cached_bytes_ += s->pooled_bytes;
    s->next_free = free_;
    free_ = s;
    ++cached_;
}

size_t ConnPool::trim(size_t keep) {
    size_t n = 0;
    while (cached_ > keep) {
        Conn::State *s = free_;
        free_ = s->next_free;
        --cached_;
        cached_bytes_ -= s->pooled_bytes;
        n += s->pooled_bytes - s->out.held_bytes(); // its segment is segs_'s to count
        delete s; // its kept segment goes to segs_, trimmed below
    }
    freed_ += n;
    return n + segs_.trim(keep);
}

} // namespace weir
