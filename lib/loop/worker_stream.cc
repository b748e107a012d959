// Streamed answers (weir_stream_*): the head, body pieces and the end, from
// the owning thread directly or from any thread through the answer queue,
// with the stream window as backpressure. A writer refused for room
// (-EAGAIN) is told when there is some again: the loop hands the stream's
// handle back (inline: on_request again; driven: in the next poll batch)
// once half the window has left.
//
// Order: a stream's pieces are applied in the order they were given. One
// writer at a time per stream (weir.h); a piece from the owning thread goes
// through the queue too while any posted piece of that stream waits there.
#include <cerrno>
#include <climits>
#include <cstdio>

#include "loop/engine.h"
#include "loop/worker.h"
#include "proto/answer_rules.h"

namespace weir {

int Worker::stream_start(TicketRef &r, int status, const weir_header_t *h, size_t nh, uint64_t length,
                         uint32_t flags) {
    if (flags & ~WEIR_RESPOND_CLOSE)
        return -EINVAL;
    if (int rc = answer_check(status, h, nh, nullptr, 0); rc < 0)
        return rc;
    bool own = owner_thread();
    Exchange *x = nullptr;
    if (int rc = r.begin_stream(own, &x); rc < 0)
        return rc;
    Ticket &t = r.ticket();
    // The request stays as it was while its exchange is out: any thread may
    // read it to learn the framing, which write and end check on every
    // thread alike.
    StreamRule rule = stream_rule(x->req, status, t.head, length != UINT64_MAX);
    t.trailers = rule.trailers;
    t.left = rule.counted ? length : UINT64_MAX;
    Slot &s = *static_cast<Slot *>(x->user);
    if (own && x == cur_ex_)
        cur_answered_ = true; // also when it is posted behind an interim answer (below)
    if (own && nothing_posted(r)) {
        uint64_t handle = x->handle; // x may be gone after a refused start (worker_answers.cc)
        held_from(s, x);
        int rc = s.session().stream_start(x, status, h, nh, length, flags);
        if (rc < 0)
            tickets_.retire(handle); // GONE or ENOMEM: consumed (the rule)
        if (x == cur_ex_)
            cur_answered_ = true; // the answer has begun: the handler may return
        s.answered = true;
        mark_dirty(s);
        return rc;
    }
    if (finished())
        return WEIR_E_GONE;
    if (s.gone.load(std::memory_order_acquire)) {
        if (r.end_stream(&x) == 0)
            post_drop(x, false);
        return WEIR_E_GONE;
    }
    Answer *a = answer_pool_.make(x, status, h, nh, nullptr, 0, flags);
    if (!a) {
        if (r.end_stream(&x) == 0)
            post_drop(x, true);
        return -ENOMEM;
    }
    a->kind = AnswerKind::Start;
    a->handle = x->handle;
    a->length = length;
    t.nodes.fetch_add(1, std::memory_order_relaxed);
    push_and_wake(answers_, a);
    return 0;
}

// Room for n more bytes of t's stream, or -EAGAIN (want_room raised). The
// loop publishes backlog and then reads want_room; the writer raises
// want_room and then reads backlog again (both seq_cst), so a drain that
// raced the refusal is seen by one of them.
int Worker::stream_room(Ticket &t, size_t n) {
    size_t window = engine_.settings().stream_window;
    if (n > window)
        return -EMSGSIZE;
    auto used = [&] {
        return t.bytes.load(std::memory_order_seq_cst) + t.backlog.load(std::memory_order_seq_cst);
    };
    uint64_t u = used();
    if (u == 0 || u + n <= window)
        return 0;
    t.want_room.store(true, std::memory_order_seq_cst);
    u = used();
    if (u == 0 || u + n <= window) {
        t.want_room.store(false, std::memory_order_relaxed);
        return 0;
    }
    return -EAGAIN;
}

int Worker::stream_write(TicketRef &r, const void *p, size_t n) {
    if (n && !p)
        return -EINVAL;
    Exchange *x = nullptr;
    if (int rc = r.stream(&x); rc < 0)
        return rc;
    Ticket &t = r.ticket();
    if (t.left != UINT64_MAX && n > t.left)
        return -EINVAL; // past the announced length
    Slot &s = *static_cast<Slot *>(x->user);
    // Before the room: a dead connection's window never drains, and a writer
    // told -EAGAIN would wait for a hand-back that never comes.
    if (s.gone.load(std::memory_order_acquire)) {
        if (r.end_stream(&x) == 0)
            post_drop(x, false);
        return WEIR_E_GONE;
    }
    if (int rc = stream_room(t, n); rc < 0)
        return rc;
    if (t.left != UINT64_MAX)
        t.left -= n;
    if (owner_thread() && t.nodes.load(std::memory_order_acquire) == 0) {
        uint64_t handle = x->handle; // x may be gone after a refused write (worker_answers.cc)
        held_from(s, x);
        int rc = s.session().stream_write(x, p, n);
        if (rc < 0)
            tickets_.retire(handle);
        else
            t.backlog.store(s.session().stream_backlog(x), std::memory_order_seq_cst);
        s.answered = true;
        mark_dirty(s);
        return rc;
    }
    if (finished())
        return WEIR_E_GONE;
    if (s.gone.load(std::memory_order_acquire)) {
        if (r.end_stream(&x) == 0)
            post_drop(x, false);
        return WEIR_E_GONE;
    }
    Answer *a = answer_pool_.make(x, 0, nullptr, 0, p, n, 0);
    if (!a) {
        if (r.end_stream(&x) == 0)
            post_drop(x, true);
        return -ENOMEM;
    }
    a->kind = AnswerKind::Write;
    a->handle = x->handle;
    t.bytes.fetch_add(n, std::memory_order_seq_cst);
    t.nodes.fetch_add(1, std::memory_order_relaxed);
    push_and_wake(answers_, a);
    return 0;
}

int Worker::stream_end(TicketRef &r, const weir_header_t *tr, size_t nt) {
    Exchange *x = nullptr;
    if (int rc = r.stream(&x); rc < 0)
        return rc;
    Ticket &t = r.ticket();
    if (t.left != UINT64_MAX && t.left > 0)
        return -EINVAL; // bytes owed: write them first
    if (nt && (!t.trailers || fields_check(tr, nt) < 0))
        return -EINVAL;
    if (int rc = r.end_stream(&x); rc < 0)
        return rc;
    Slot &s = *static_cast<Slot *>(x->user);
    if (owner_thread() && t.nodes.load(std::memory_order_acquire) == 0) {
        uint64_t handle = x->handle; // x may be gone after the end (worker_answers.cc)
        int rc = s.session().stream_end(x, tr, nt);
        tickets_.retire(handle);
        s.answered = true;
        mark_dirty(s);
        return rc;
    }
    return post_foreign(x, AnswerKind::End, 200, tr, nt, &t);
}

// The stream ends short: what was written leaves, then the connection
// closes, so the client sees a body cut off (a chunked one without its last
// chunk, a Length one short), not an answer that looks whole.
int Worker::stream_abort(TicketRef &r) {
    Exchange *x = nullptr;
    if (int rc = r.end_stream(&x); rc < 0)
        return rc;
    Ticket &t = r.ticket();
    Slot &s = *static_cast<Slot *>(x->user);
    if (owner_thread() && t.nodes.load(std::memory_order_acquire) == 0) {
        uint64_t handle = x->handle; // x may be gone after the abort (worker_answers.cc)
        int rc = s.session().stream_abort(x);
        tickets_.retire(handle);
        s.answered = true;
        mark_dirty(s);
        return rc;
    }
    return post_foreign(x, AnswerKind::Abort, 0, nullptr, 0, &t); // -ENOMEM: the connection is aborted
}

// The tail of a call from another thread, as the failure rule has it: the
// worker finished (GONE), the connection died (GONE, x released by the
// loop), no memory for the node (-ENOMEM, x released with the connection
// aborted or a 500), or the node posted (0). t: a stream's ticket, whose
// nodes keep the owning thread's own pieces queued behind this one.
int Worker::post_foreign(Exchange *x, AnswerKind kind, int status, const weir_header_t *h, size_t nh, Ticket *t) {
    if (finished())
        return WEIR_E_GONE;
    Slot &s = *static_cast<Slot *>(x->user);
    if (s.gone.load(std::memory_order_acquire)) {
        post_drop(x, false);
        return WEIR_E_GONE;
    }
    Answer *a = answer_pool_.make(x, status, h, nh, nullptr, 0, 0);
    if (!a) {
        post_drop(x, true);
        return -ENOMEM;
    }
    a->kind = kind;
    a->handle = x->handle;
    if (t)
        t->nodes.fetch_add(1, std::memory_order_relaxed);
    push_and_wake(answers_, a);
    return 0;
}

int64_t Worker::stream_room_now(TicketRef &r) {
    Exchange *x = nullptr;
    if (int rc = r.stream(&x); rc < 0)
        return rc;
    Ticket &t = r.ticket();
    uint64_t used = t.bytes.load(std::memory_order_seq_cst) + t.backlog.load(std::memory_order_seq_cst);
    size_t window = engine_.settings().stream_window;
    return used >= window ? 0 : static_cast<int64_t>(window - used);
}

// A posted piece, in its turn. The ticket is checked before x is touched:
// a stream the connection's death (or the handler deadline) already ended
// leaves its later pieces with nothing to do.
void Worker::apply_stream(Answer *a) {
    Ticket *t = tickets_.at(a->handle);
    TicketState st = tickets_.state(a->handle);
    // Claimed: the writer has ended the stream and its End follows this
    // piece in the queue; the generation still says it is this stream.
    bool live = t && (st == TicketState::Stream || st == TicketState::Claimed);
    if (t && a->kind != AnswerKind::End && a->kind != AnswerKind::Abort) {
        t->nodes.fetch_sub(1, std::memory_order_release);
        t->bytes.fetch_sub(a->body_len, std::memory_order_seq_cst);
    }
    if (!live) {
        answer_pool_.give(a);
        return;
    }
    Exchange *x = a->x;
    Slot &s = *static_cast<Slot *>(x->user);
    Session &c = s.session();
    int rc = 0;
    held_from(s, x); // the host is at work on it
    switch (a->kind) {
    case AnswerKind::Start:
        rc = c.stream_start(x, a->status, a->headers, a->num_headers, a->length, a->flags);
        break;
    case AnswerKind::Write:
        rc = c.stream_write(x, a->body, a->body_len);
        break;
    case AnswerKind::End:
        t->nodes.fetch_sub(1, std::memory_order_release);
        rc = c.stream_end(x, a->headers, a->num_headers);
        if (rc == -EINVAL) { // checked before posting: a bug, and the answer cannot be framed
            log_once(LOG_BAD_ANSWER, "a streamed answer's end was refused; connection closed");
            c.abort_now(WEIR_CLOSE_RESOURCE);
            c.respond(x, 500, nullptr, 0, nullptr, 0, 0); // dropped: released
        }
        tickets_.retire(a->handle);
        break;
    case AnswerKind::Abort:
        t->nodes.fetch_sub(1, std::memory_order_release);
        rc = c.stream_abort(x);
        tickets_.retire(a->handle);
        break;
    case AnswerKind::Respond:
    case AnswerKind::File:
    case AnswerKind::Upgrade:
    case AnswerKind::Interim:
        break; // apply(), apply_file(), apply_upgrade(), apply_interim()
    }
    if (rc < 0 && a->kind != AnswerKind::End && a->kind != AnswerKind::Abort)
        tickets_.retire(a->handle); // the stream died with its connection
    s.answered = true;
    mark_dirty(s);
    answer_pool_.give(a);
}

// After the write: each stream publishes what is still unsent (the write
// may have sent it all), then says whether a refused writer has room now.
bool Worker::streams_have_room(Slot &s) {
    Session &c = s.session();
    size_t half = engine_.settings().stream_window / 2;
    bool any = false;
    c.each_stream([&](Exchange *x) {
        if (c.file_stream(x)) { // the engine's own: fed again once under half (feed_files' bound)
            if (c.stream_backlog(x) < half || c.stream_backlog(x) == 0)
                any = true;
            return;
        }
        Ticket *t = tickets_.at(x->handle);
        if (!t)
            return;
        uint64_t b = c.stream_backlog(x);
        t->backlog.store(b, std::memory_order_seq_cst);
        if (t->want_room.load(std::memory_order_seq_cst) && b + t->bytes.load(std::memory_order_seq_cst) <= half)
            any = true;
    });
    return any;
}

// Settle, before the write: each stream of s publishes what it holds
// unsent, and one whose writer was refused is handed back once half the
// window is free.
void Worker::publish_streams(Slot &s) {
    Session &c = s.session();
    size_t half = engine_.settings().stream_window / 2;
    c.each_stream([&](Exchange *x) {
        Ticket *t = tickets_.at(x->handle);
        if (!t)
            return;
        uint64_t b = c.stream_backlog(x);
        t->backlog.store(b, std::memory_order_seq_cst);
        if (!t->want_room.load(std::memory_order_seq_cst))
            return;
        if (b + t->bytes.load(std::memory_order_seq_cst) > half)
            return;
        if (!t->want_room.exchange(false, std::memory_order_acq_rel))
            return;
        if (inline_) {
            Exchange *outer = cur_ex_;
            cur_ex_ = nullptr; // not a new request: nothing to defer, no 500 fallback
            engine_.cfg().on_request(engine_.cfg().user, reinterpret_cast<weir_exchange *>(x->handle));
            cur_ex_ = outer;
        } else if (ready_room()) {
            ready_.push_back(x->handle);
        } else {
            t->want_room.store(true, std::memory_order_relaxed); // try again at the next settle
        }
    });
}

} // namespace weir
