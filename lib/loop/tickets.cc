// Exchange handles: the tables and the process-wide registry (tickets.h).
#include "loop/tickets.h"

#include <cerrno>
#include <mutex>
#include <new>
#include <thread>

#include "proto/exchange.h"
#include "weir.h"

namespace weir {

namespace {

constexpr uint32_t kStateMask = 7;

struct RegSlot {
    std::atomic<TicketTable *> table{nullptr};
    std::atomic<uint32_t> users{0};
    bool taken = false;
    uint32_t gen_floor = 1; // every generation a former table here used is below it
};

struct Registry {
    std::mutex mu; // attach and detach only
    RegSlot slots[TicketTable::kMaxTables + 1];
    uint32_t hint = 1;
};

Registry &registry() {
    static Registry r;
    return r;
}

uint64_t word(uint32_t gen, TicketState st) { return (static_cast<uint64_t>(gen) << 32) | static_cast<uint32_t>(st); }
uint32_t gen_of(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
TicketState state_of(uint64_t w) { return static_cast<TicketState>(w & kStateMask); }

uint32_t table_of(uint64_t h) { return static_cast<uint32_t>(h >> (64 - TicketTable::kTableBits)); }
uint32_t entry_of(uint64_t h) {
    return static_cast<uint32_t>(h >> 32) & ((1u << TicketTable::kEntryBits) - 1);
}
uint32_t hgen_of(uint64_t h) { return static_cast<uint32_t>(h); }

uint64_t make_handle(uint32_t table, uint32_t entry, uint32_t gen) {
    return (static_cast<uint64_t>(table) << (64 - TicketTable::kTableBits)) | (static_cast<uint64_t>(entry) << 32) |
           gen;
}

bool live_state(TicketState s) {
    return s == TicketState::Local || s == TicketState::Any || s == TicketState::Stream;
}

} // namespace

std::atomic<bool> &tickets_raw_pointers() {
    static std::atomic<bool> on{false};
    return on;
}

TicketTable::~TicketTable() {
    detach();
    for (uint32_t c = 0; c < nchunks_; c++)
        delete[] chunks_[c].load(std::memory_order_relaxed);
}

int TicketTable::attach(Worker *w) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    for (uint32_t n = 0; n < kMaxTables; n++) {
        uint32_t i = (r.hint - 1 + n) % kMaxTables + 1;
        RegSlot &s = r.slots[i];
        if (s.taken)
            continue;
        s.taken = true;
        r.hint = i % kMaxTables + 1;
        worker_ = w;
        index_ = i;
        gen_base_ = gen_max_ = s.gen_floor;
        s.table.store(this, std::memory_order_seq_cst);
        return 0;
    }
    return -EMFILE;
}

void TicketTable::detach() {
    if (!index_)
        return;
    Registry &r = registry();
    RegSlot &s = r.slots[index_];
    s.table.store(nullptr, std::memory_order_seq_cst);
    // A TicketRef raised users before it loaded the table (both seq_cst):
    // either it saw null, or it is counted here and is waited for.
    while (s.users.load(std::memory_order_seq_cst) != 0)
        std::this_thread::yield();
    std::lock_guard<std::mutex> lk(r.mu);
    s.gen_floor = gen_max_ + 1;
    s.taken = false;
    index_ = 0;
}

Ticket *TicketTable::entry(uint32_t i) const {
    uint32_t c = i / kChunk;
    if (c >= kMaxChunks)
        return nullptr;
    Ticket *p = chunks_[c].load(std::memory_order_acquire);
    return p ? &p[i % kChunk] : nullptr;
}

bool TicketTable::reserve() {
    if (free_head_)
        return true;
    if (nchunks_ == kMaxChunks)
        return false;
    Ticket *c = new (std::nothrow) Ticket[kChunk];
    if (!c)
        return false;
    uint32_t first = nchunks_ * kChunk;
    for (uint32_t k = 0; k < kChunk; k++) {
        c[k].word.store(word(gen_base_, TicketState::Free), std::memory_order_relaxed);
        c[k].next = k + 1 < kChunk ? first + k + 2 : 0;
    }
    chunks_[nchunks_++].store(c, std::memory_order_release);
    free_head_ = first + 1;
    free_tail_ = first + kChunk;
    return true;
}

uint64_t TicketTable::issue(Exchange *x, TicketState st, bool head) {
    uint32_t i = free_head_ - 1;
    Ticket *t = entry(i);
    free_head_ = t->next;
    if (!free_head_)
        free_tail_ = 0;
    t->next = 0;
    t->x = x;
    t->head = head;
    t->image = nullptr;
    t->nodes.store(0, std::memory_order_relaxed);
    t->bytes.store(0, std::memory_order_relaxed);
    t->backlog.store(0, std::memory_order_relaxed);
    t->want_room.store(false, std::memory_order_relaxed);
    t->upgrading.store(false, std::memory_order_relaxed);
    t->seen.store(0, std::memory_order_relaxed);
    t->stream_gone.store(false, std::memory_order_relaxed);
    uint32_t gen = gen_of(t->word.load(std::memory_order_relaxed));
    t->word.store(word(gen, st), std::memory_order_release);
    out_++;
    uint64_t h = make_handle(index_, i, gen);
    x->handle = h;
    if (tickets_raw_pointers().load(std::memory_order_relaxed))
        return reinterpret_cast<uintptr_t>(x);
    return h;
}

void TicketTable::give_back(uint32_t i, uint32_t gen) {
    Ticket *t = entry(i);
    uint32_t next = gen + 1;
    if (next == 0)
        next = 1;
    if (next > gen_max_)
        gen_max_ = next;
    t->x = nullptr;
    t->word.store(word(next, TicketState::Free), std::memory_order_release);
    t->next = 0;
    if (free_tail_)
        entry(free_tail_ - 1)->next = i + 1;
    else
        free_head_ = i + 1;
    free_tail_ = i + 1;
    out_--;
}

void TicketTable::retire(uint64_t h) {
    uint32_t i = entry_of(h);
    Ticket *t = entry(i);
    if (!t)
        return;
    // A CAS, not a store: a writer may be moving a stream's entry at the
    // same time (Stream -> Claimed); whichever state it is in, it goes.
    uint64_t w = t->word.load(std::memory_order_acquire);
    while (gen_of(w) == hgen_of(h) && state_of(w) != TicketState::Free)
        if (t->word.compare_exchange_weak(w, word(hgen_of(h), TicketState::Claimed), std::memory_order_acq_rel)) {
            give_back(i, hgen_of(h));
            return;
        }
}

bool TicketTable::cancel(uint64_t h, TicketState *was) {
    uint32_t i = entry_of(h);
    Ticket *t = entry(i);
    if (!t)
        return false;
    for (TicketState st : {TicketState::Local, TicketState::Any, TicketState::Stream}) {
        uint64_t w = word(hgen_of(h), st);
        if (t->word.compare_exchange_strong(w, word(hgen_of(h), TicketState::Claimed), std::memory_order_acq_rel)) {
            if (was)
                *was = st;
            give_back(i, hgen_of(h));
            return true;
        }
    }
    return false;
}

void TicketTable::set_upgraded(uint64_t h, void *image) {
    Ticket *t = at(h);
    if (!t)
        return;
    t->image = image;
    t->word.store(word(hgen_of(h), TicketState::Upgraded), std::memory_order_release);
}

bool TicketTable::take_upgraded(uint64_t h, void **image) {
    Ticket *t = at(h);
    if (!t)
        return false;
    uint64_t w = word(hgen_of(h), TicketState::Upgraded);
    if (!t->word.compare_exchange_strong(w, word(hgen_of(h), TicketState::Claimed), std::memory_order_acq_rel))
        return false;
    *image = t->image;
    t->image = nullptr;
    return true;
}

TicketState TicketTable::state(uint64_t h) const {
    const Ticket *t = at(h);
    if (!t)
        return TicketState::Free;
    uint64_t w = t->word.load(std::memory_order_acquire);
    return gen_of(w) == hgen_of(h) ? state_of(w) : TicketState::Free;
}

Ticket *TicketTable::at(uint64_t h) const {
    if (table_of(h) != index_)
        return nullptr;
    Ticket *t = entry(entry_of(h));
    if (!t || gen_of(t->word.load(std::memory_order_acquire)) != hgen_of(h))
        return nullptr;
    return t;
}

Exchange *TicketTable::live(uint64_t h) const {
    if (table_of(h) != index_)
        return nullptr;
    const Ticket *t = entry(entry_of(h));
    if (!t)
        return nullptr;
    uint64_t w = t->word.load(std::memory_order_acquire);
    return gen_of(w) == hgen_of(h) && live_state(state_of(w)) ? t->x : nullptr;
}

bool TicketTable::make_any(uint64_t h) {
    Ticket *t = table_of(h) == index_ ? entry(entry_of(h)) : nullptr;
    if (!t)
        return false;
    uint64_t w = word(hgen_of(h), TicketState::Local);
    return t->word.compare_exchange_strong(w, word(hgen_of(h), TicketState::Any), std::memory_order_acq_rel);
}

TicketRef::TicketRef(uint64_t h) : h_(h) {
    if (tickets_raw_pointers().load(std::memory_order_relaxed) && h && table_of(h) == 0)
        h_ = h = reinterpret_cast<Exchange *>(h)->handle; // the arm: whatever lives there now
    uint32_t ti = table_of(h);
    if (ti == 0 || ti > TicketTable::kMaxTables)
        return;
    RegSlot &s = registry().slots[ti];
    s.users.fetch_add(1, std::memory_order_seq_cst);
    slot_ = ti;
    TicketTable *t = s.table.load(std::memory_order_seq_cst);
    if (!t)
        return;
    Ticket *e = t->entry(entry_of(h));
    if (!e)
        return;
    table_ = t;
    t_ = e;
}

TicketRef::~TicketRef() {
    if (slot_)
        registry().slots[slot_].users.fetch_sub(1, std::memory_order_seq_cst);
}

Exchange *TicketRef::peek() const {
    if (!t_)
        return nullptr;
    uint64_t w = t_->word.load(std::memory_order_acquire);
    return gen_of(w) == hgen_of(h_) && live_state(state_of(w)) ? t_->x : nullptr;
}

// Local|Any -> to, for the one answer (Claimed) or a streamed one (Stream).
int TicketRef::take(bool owner, TicketState to, Exchange **x) {
    if (!t_)
        return WEIR_E_STALE;
    uint64_t w = t_->word.load(std::memory_order_acquire);
    for (;;) {
        if (gen_of(w) != hgen_of(h_))
            return WEIR_E_STALE;
        TicketState st = state_of(w);
        if (st == TicketState::Local && !owner)
            return WEIR_E_STATE;
        if (st == TicketState::Stream)
            return -EINVAL; // begun already: a streamed answer ends with weir_stream_end
        if (!live_state(st))
            return WEIR_E_STALE;
        if (t_->word.compare_exchange_weak(w, word(hgen_of(h_), to), std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
            *x = t_->x;
            return 0;
        }
    }
}

int TicketRef::open(bool owner) const {
    if (!t_)
        return WEIR_E_STALE;
    uint64_t w = t_->word.load(std::memory_order_acquire);
    if (gen_of(w) != hgen_of(h_))
        return WEIR_E_STALE;
    switch (state_of(w)) {
    case TicketState::Local:
        return owner ? 0 : WEIR_E_STATE;
    case TicketState::Any:
        return 0;
    case TicketState::Stream:
        return -EINVAL;
    default:
        return WEIR_E_STALE;
    }
}

int TicketRef::claim(bool owner, Exchange **x) { return take(owner, TicketState::Claimed, x); }

int TicketRef::begin_stream(bool owner, Exchange **x) { return take(owner, TicketState::Stream, x); }

int TicketRef::stream(Exchange **x) const {
    if (!t_)
        return WEIR_E_STALE;
    uint64_t w = t_->word.load(std::memory_order_acquire);
    if (gen_of(w) != hgen_of(h_) || !live_state(state_of(w)))
        return WEIR_E_STALE;
    if (state_of(w) != TicketState::Stream)
        return WEIR_E_STATE;
    *x = t_->x;
    return 0;
}

int TicketRef::end_stream(Exchange **x) {
    if (int rc = stream(x); rc < 0)
        return rc;
    uint64_t w = word(hgen_of(h_), TicketState::Stream);
    if (!t_->word.compare_exchange_strong(w, word(hgen_of(h_), TicketState::Claimed), std::memory_order_acq_rel))
        return WEIR_E_STALE;
    return 0;
}

} // namespace weir
