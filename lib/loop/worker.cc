// The worker's pass, its doors and its connections. See docs/engine.md.
#include "loop/worker.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "http1/response.h"
#include "loop/engine.h"
#include "loop/linger.h"

namespace weir {

namespace {

constexpr uint32_t kSlotChunk = 64;

// The address of a thread_local names the thread: weir_respond compares it
// with the worker's owner to pick the direct path or the queue.
thread_local char tl_token;
uintptr_t my_token() { return reinterpret_cast<uintptr_t>(&tl_token); }

TimerKind timer_for(ConnWait w) {
    switch (w) {
    case ConnWait::Idle:
        return TimerKind::Idle;
    case ConnWait::Head:
        return TimerKind::Head;
    case ConnWait::Output:
        return TimerKind::Output;
    default:
        return TimerKind::None;
    }
}

uint32_t close_for_timer(TimerKind k) {
    switch (k) {
    case TimerKind::Idle:
        return WEIR_CLOSE_IDLE_TIMEOUT;
    case TimerKind::Head:
        return WEIR_CLOSE_HEADER_TIMEOUT;
    default:
        return WEIR_CLOSE_WRITE_TIMEOUT;
    }
}

uint32_t close_for_errno(int e) {
    return (e == ECONNRESET || e == EPIPE || e == ECONNABORTED) ? WEIR_CLOSE_PEER : WEIR_CLOSE_IO_ERROR;
}

bool resource_errno(int e) { return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM; }

} // namespace

Worker::Worker(Engine &engine, uint32_t index) : engine_(engine), index_(index) {
    const weir_config &c = engine.cfg();
    inline_ = c.mode == WEIR_MODE_INLINE;
    accept_batch_ = c.accept_batch;
    max_connections_ = c.max_connections;
    nodelay_ = c.tcp_nodelay != 0;
    timers_.set_duration(TimerKind::Idle, c.idle_timeout_ms);
    timers_.set_duration(TimerKind::Head, c.header_timeout_ms);
    timers_.set_duration(TimerKind::Output, c.write_timeout_ms);
}

Worker::~Worker() {
    // Zombies and anything a host never answered die with the worker.
    for (auto &chunk : chunks_)
        for (uint32_t i = 0; i < kSlotChunk; i++) {
            Slot &s = chunk[i];
            if (!s.in_use)
                continue;
            if (s.fd >= 0)
                ::close(s.fd);
            s.conn().~Conn();
            s.in_use = false;
        }
    for (MpscNode *n = answers_.take_all(); n;) {
        auto *a = static_cast<Answer *>(n);
        n = n->next;
        answer_pool_.give(a);
    }
    MpscNode *lists[2] = {handoff_local_, handoffs_.take_all()};
    for (MpscNode *n : lists)
        while (n) {
            auto *h = static_cast<Handoff *>(n);
            n = n->next;
            ::close(h->fd);
            delete h;
        }
    listener_.close_now();
    if (wake_fd_ >= 0)
        ::close(wake_fd_);
}

int Worker::init() {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0)
        return -errno;
    pool_ = std::make_unique<ConnPool>(engine_.settings());
    ready_.reserve(256);
    return io_init();
}

int Worker::open_listener(const sockaddr_storage &addr, socklen_t len, const ListenOptions &opt) {
    int fd = listener_open(addr, len, opt);
    if (fd < 0)
        return fd;
    int rc = io_add_listener(fd);
    if (rc < 0) {
        ::close(fd);
        return rc;
    }
    listener_.fd = fd;
    listener_deferred_ = opt.defer_accept;
    set_listener_state(ListenerState::Active);
    listen_door_.ready = true; // connections may have queued before the first wait
    return fd;
}

bool Worker::owner_thread() const { return owner_.load(std::memory_order_relaxed) == my_token(); }
void Worker::take_ownership() { owner_.store(my_token(), std::memory_order_relaxed); }

void Worker::log_once(uint32_t kind, const char *msg) { engine_.log_once(kind, WEIR_LOG_ERROR, msg); }

// ---------------------------------------------------------------- the pass

void Worker::run() {
    take_ownership();
    while (!finished())
        pass(-1);
}

// One pass: flush what was answered since the last one, wait, let the backend
// report (reads run handlers at once; doors are only recorded), then queued
// answers, blocked reads, timers, shutdown, one batch per door, and one flush
// for everything the pass answered.
void Worker::pass(int timeout_ms) {
    now_ms_ = mono_ms();
    flush();
    io_wait(wait_timeout(timeout_ms));
    now_ms_ = mono_ms();
    metrics.add(M_LOOP_PASSES);
    drain_answers();
    retry_reads();
    expire_timers();
    if (!stop_begun_ && engine_.stopping())
        begin_stop();
    pause_tick();
    run_doors();
    flush();
    if (stop_begun_)
        stop_tick();
}

// The one place the wait is bounded: pending work makes it 0, otherwise the
// earliest of the host's bound, the next timer, the accept retry after a
// resource error, the shutdown grace and the pause linger's deadline. A pause
// command not yet acted on makes it 0 too.
int Worker::wait_timeout(int host_timeout_ms) {
    if (dirty_ || retry_ || listen_door_.ready || listen_door_.owed || handoff_door_.ready || handoff_door_.owed ||
        !answers_.empty() || ready_head_ < ready_.size() || (!stop_begun_ && engine_.stopping()) || pause_unseen())
        return 0;
    int64_t deadline = timers_.next_deadline();
    if (listener_.state == ListenerState::Lingering && linger_deadline_ms_ < deadline)
        deadline = linger_deadline_ms_;
    if (listen_door_.resource_wait && listen_door_.retry_at_ms < deadline)
        deadline = listen_door_.retry_at_ms;
    if (handoff_door_.resource_wait && handoff_door_.retry_at_ms < deadline)
        deadline = handoff_door_.retry_at_ms;
    if (stop_begun_ && engine_.grace_deadline_ms() < deadline)
        deadline = engine_.grace_deadline_ms();
    if (deadline == INT64_MAX)
        return host_timeout_ms;
    int64_t rel = deadline - mono_ms();
    if (rel < 0)
        rel = 0;
    if (host_timeout_ms >= 0 && host_timeout_ms < rel)
        return host_timeout_ms;
    return rel > INT_MAX ? INT_MAX : static_cast<int>(rel);
}

void Worker::on_wake() {
    wake_pending_.store(false);
    if (!handoffs_.empty())
        handoff_door_.ready = true;
}

void Worker::wake() {
    if (!wake_pending_.exchange(true)) {
        uint64_t one = 1;
        ssize_t rc = ::write(wake_fd_, &one, sizeof one);
        (void)rc; // EAGAIN: the counter is full, so a wake is pending anyway
    }
}

// ---------------------------------------------------------------- connections

void Worker::mark_dirty(Slot &s) {
    if (s.dirty)
        return;
    s.dirty = true;
    s.next_dirty = nullptr;
    if (dirty_tail_)
        dirty_tail_->next_dirty = &s;
    else
        dirty_ = &s;
    dirty_tail_ = &s;
}

void Worker::flush() {
    while (dirty_) {
        Slot *s = dirty_;
        dirty_ = s->next_dirty;
        if (!dirty_)
            dirty_tail_ = nullptr;
        s->dirty = false;
        s->next_dirty = nullptr;
        settle(*s);
    }
}

// Once per pass for every connection the pass touched: one write of all its
// output, then the timer its state calls for, a read to resume if the Conn
// has room again, a close when it is done, and a free when a zombie is spent.
void Worker::settle(Slot &s) {
    if (s.fd >= 0) {
        Conn &c = s.conn();
        // Answers free pipeline room: requests the Conn already holds (it may
        // have read past max_pipeline) are handed out now, before the write,
        // so inline answers to them leave in the same write.
        dispatch(s);
        fold(s); // before the write, so a client that sees the answer sees the counts
        if (c.output_pending() > 0 && !s.out_armed)
            io_write(s);
    }
    if (s.fd >= 0) {
        Conn &c = s.conn();
        fold(s);
        ConnWait w = c.wait();
        if (w == ConnWait::Done || s.broken) {
            // After a reset nothing more can be sent: the Conn turns zombie
            // for the exchanges still out, whose answers get WEIR_E_GONE.
            close_fd(s, c.close_reason());
        } else {
            TimerKind k = timer_for(w);
            bool rearm = k != s.timer.kind || (k == TimerKind::Idle && s.activity) ||
                         (k == TimerKind::Output && s.progress);
            if (k == TimerKind::None)
                timers_.disarm(s.timer);
            else if (rearm)
                timers_.arm(s.timer, k, now_ms_);
            if (s.read_blocked && !s.eof && !s.retry_queued && c.read_space().iov_len > 0) {
                s.retry_queued = true;
                s.next_retry = retry_;
                retry_ = &s;
            }
        }
    }
    s.activity = s.progress = false;
    if (s.fd < 0 && s.in_use && !s.retry_queued && s.conn().outstanding() == 0)
        free_slot(s);
}

void Worker::retry_reads() {
    Slot *r = retry_;
    retry_ = nullptr;
    while (r) {
        Slot *s = r;
        r = s->next_retry;
        s->next_retry = nullptr;
        s->retry_queued = false;
        if (s->fd >= 0 && !s->eof) {
            s->read_blocked = false;
            io_read(*s);
        }
        mark_dirty(*s);
    }
}

bool Worker::conn_input(Slot &s, ssize_t n) {
    Conn &c = s.conn();
    mark_dirty(s);
    if (n > 0) {
        metrics.add(M_BYTES_IN, static_cast<uint64_t>(n));
        s.activity = true;
        c.on_read(static_cast<size_t>(n));
        dispatch(s);
        return true;
    }
    s.eof = true;
    if (n == 0) {
        c.on_eof();
    } else {
        c.close(close_for_errno(static_cast<int>(-n)));
        s.broken = true;
    }
    dispatch(s);
    return false;
}

void Worker::conn_output(Slot &s, ssize_t n) {
    if (n >= 0) {
        if (n > 0) {
            metrics.add(M_BYTES_OUT, static_cast<uint64_t>(n));
            s.activity = s.progress = true;
        }
        s.conn().on_written(static_cast<size_t>(n));
        return;
    }
    uint32_t reason = close_for_errno(static_cast<int>(-n));
    s.conn().close(reason);
    close_fd(s, reason);
}

void Worker::conn_writable(Slot &s) {
    s.out_armed = false;
    mark_dirty(s);
}

void Worker::dispatch(Slot &s) {
    Conn &c = s.conn();
    while (Exchange *x = c.take_request()) {
        x->user = &s;
        if (inline_)
            call_handler(x);
        else
            ready_.push_back(x);
    }
}

void Worker::call_handler(Exchange *x) {
    cur_ex_ = x;
    cur_answered_ = cur_deferred_ = false;
    engine_.cfg().on_request(engine_.cfg().user, reinterpret_cast<weir_exchange *>(x));
    cur_ex_ = nullptr;
    if (!cur_answered_ && !cur_deferred_) {
        // The contract says answer or defer; a handler that did neither
        // would leave the connection hanging forever.
        log_once(LOG_NO_ANSWER, "on_request returned without weir_respond or weir_defer; answered 500");
        Slot &s = *static_cast<Slot *>(x->user);
        s.conn().respond(x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
        mark_dirty(s);
    }
}

void Worker::fold(Slot &s) {
    const Conn::Counters &c = s.conn().counters();
    metrics.add(M_REQUESTS, c.requests - s.folded.requests);
    metrics.add(M_RESPONSES, c.responses - s.folded.responses);
    metrics.add(M_PARSE_ERRORS, c.parse_errors - s.folded.parse_errors);
    metrics.add(M_CONTINUES_SENT, c.continues_sent - s.folded.continues_sent);
    s.folded = c;
}

// Closes the fd; the Conn stays (a zombie) while exchanges are outstanding.
// After an error answer the peer may still be sending the request we
// refused; closing with those bytes unread makes the kernel answer with a
// reset, which can destroy the error answer before the peer reads it. So send
// FIN first and discard what has already arrived (bounded: later bytes still
// draw a reset, but the answer and the FIN are ahead of them).
void Worker::drain_before_close(int fd) {
    ::shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 64; i++) {
        ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0)
            break;
    }
}

void Worker::close_fd(Slot &s, uint32_t reason) {
    if (s.fd < 0)
        return;
    timers_.disarm(s.timer);
    fold(s);
    io_forget_conn(s);
    // Counted before the peer can see the close, so a client that saw it
    // reads consistent metrics.
    metrics.close(reason);
    metrics.sub(M_CONNECTIONS_OPEN);
    if (reason == WEIR_CLOSE_BAD_REQUEST && !s.broken && !linger_hooks().skip_error_drain.load())
        drain_before_close(s.fd);
    ::close(s.fd);
    s.fd = -1;
    s.gone.store(true, std::memory_order_release);
    s.conn().on_closed();
    if (s.live_prev)
        s.live_prev->live_next = s.live_next;
    else
        live_ = s.live_next;
    if (s.live_next)
        s.live_next->live_prev = s.live_prev;
    s.live_prev = s.live_next = nullptr;
    live_count_--;
    mark_dirty(s); // settle frees it once nothing is outstanding
}

Slot *Worker::alloc_slot() {
    if (!free_slots_) {
        std::unique_ptr<Slot[]> chunk(new (std::nothrow) Slot[kSlotChunk]);
        if (!chunk)
            return nullptr;
        try {
            chunks_.push_back(nullptr);
        } catch (...) {
            return nullptr;
        }
        for (uint32_t i = 0; i < kSlotChunk; i++) {
            chunk[i].worker = this;
            chunk[i].timer.owner = &chunk[i];
            chunk[i].next_free = free_slots_;
            free_slots_ = &chunk[i];
        }
        chunks_.back() = std::move(chunk);
    }
    Slot *s = free_slots_;
    free_slots_ = s->next_free;
    s->next_free = nullptr;
    return s;
}

void Worker::free_slot(Slot &s) {
    s.conn().~Conn();
    s.in_use = false;
    s.next_free = free_slots_;
    free_slots_ = &s;
}

void Worker::admit(int fd, const sockaddr_storage &peer, socklen_t len) {
    if (nodelay_) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    Slot *s = alloc_slot();
    if (!s) {
        ::close(fd);
        metrics.close(WEIR_CLOSE_RESOURCE);
        log_once(LOG_NO_MEMORY, "out of memory for a connection slot; connection closed");
        return;
    }
    new (s->mem) Conn(engine_.settings(), *pool_, engine_.next_conn_id());
    s->in_use = true;
    s->fd = fd;
    s->gone.store(false, std::memory_order_relaxed);
    s->dirty = s->read_blocked = s->retry_queued = s->eof = s->broken = false;
    s->out_armed = s->out_registered = s->peer_hup = s->activity = s->progress = false;
    s->peer = peer;
    s->peer_len = len;
    s->folded = Conn::Counters{};
    s->live_prev = nullptr;
    s->live_next = live_;
    if (live_)
        live_->live_prev = s;
    live_ = s;
    live_count_++;
    metrics.add(M_CONNECTIONS_OPEN);
    if (io_add_conn(*s) < 0) {
        log_once(LOG_BACKEND, "cannot watch an accepted connection; closed");
        s->conn().close(WEIR_CLOSE_RESOURCE);
        close_fd(*s, WEIR_CLOSE_RESOURCE);
        return;
    }
    // With TCP_DEFER_ACCEPT the request is usually here already: serve it in
    // this pass rather than waiting for an edge.
    io_read(*s);
    mark_dirty(*s);
}

// ---------------------------------------------------------------- timers

void Worker::expire_timers() {
    TimerKind k;
    while (TimerNode *n = timers_.pop_expired(now_ms_, &k)) {
        Slot &s = *static_cast<Slot *>(n->owner);
        uint32_t reason = close_for_timer(k);
        s.conn().close(reason);
        close_fd(s, reason);
    }
}

// ---------------------------------------------------------------- doors

void Worker::run_doors() {
    if (listener_.state == ListenerState::Active || listener_.state == ListenerState::Lingering) {
        BatchResult r = run_batch(listen_door_, accept_batch_, now_ms_, retry_ms_, [this] { return accept_one(); });
        if (r.ran) {
            metrics.add(M_ACCEPT_BATCHES);
            if (r.was_owed)
                metrics.add(M_ACCEPT_OWED);
        }
    }
    BatchResult h = run_batch(handoff_door_, accept_batch_, now_ms_, retry_ms_, [this] { return admit_handoff(); });
    if (h.ran && h.was_owed)
        metrics.add(M_HANDOFFS_OWED);
}

Take Worker::accept_one() {
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int fd = ::accept4(listener_.fd, reinterpret_cast<sockaddr *>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK)
            return Take::Empty;
        if (e == EINTR)
            return Take::Other;
        char msg[128];
        if (resource_errno(e)) {
            metrics.add(M_ACCEPT_RESOURCE_ERRORS);
            std::snprintf(msg, sizeof msg, "accept4: %s; accepting paused until the next retry", strerrorname_np(e));
            log_once(LOG_ACCEPT_RESOURCE, msg);
            return Take::Resource;
        }
        metrics.add(M_ACCEPT_OTHER_ERRORS);
        std::snprintf(msg, sizeof msg, "accept4: %s", strerrorname_np(e));
        log_once(LOG_ACCEPT_OTHER, msg);
        return Take::Other;
    }
    metrics.add(M_ACCEPTED);
    accepted_in_poll_++;
    if (auto hook = linger_hooks().on_accept.load(std::memory_order_relaxed))
        hook(fd);
    if (live_count_ >= max_connections_) {
        if (hand_off(fd, ss, len))
            return Take::Took;
        metrics.close(WEIR_CLOSE_MAX_CONNECTIONS); // counted before the peer can see it
        ::close(fd);
        return Take::Took;
    }
    admit(fd, ss, len);
    return Take::Took;
}

bool Worker::hand_off(int fd, const sockaddr_storage &peer, socklen_t len) {
    if (engine_.stopping())
        return false;
    Worker *to = engine_.sibling_with_room(this);
    if (!to)
        return false;
    auto *h = new (std::nothrow) Handoff;
    if (!h)
        return false;
    h->fd = fd;
    h->peer = peer;
    h->peer_len = len;
    to->handoffs_.push(h);
    to->wake();
    metrics.add(M_HANDOFFS);
    return true;
}

Take Worker::admit_handoff() {
    if (!handoff_local_)
        handoff_local_ = handoffs_.take_all();
    if (!handoff_local_)
        return Take::Empty;
    auto *h = static_cast<Handoff *>(handoff_local_);
    handoff_local_ = h->next;
    // Never passed on again: two full workers must not play ping-pong.
    if (live_count_ >= max_connections_ && !stop_begun_) {
        metrics.close(WEIR_CLOSE_MAX_CONNECTIONS);
        ::close(h->fd);
    } else {
        admit(h->fd, h->peer, h->peer_len);
    }
    delete h;
    return Take::Took;
}

// ---------------------------------------------------------------- answers

int Worker::respond(Exchange *x, int status, const weir_header_t *h, size_t nh, const void *body, size_t len,
                    uint32_t flags) {
    Slot &s = *static_cast<Slot *>(x->user);
    if (owner_thread()) {
        int rc = s.conn().respond(x, status, h, nh, body, len, flags);
        if (rc != -EINVAL && x == cur_ex_)
            cur_answered_ = true;
        mark_dirty(s);
        return rc;
    }
    // The same rules Conn::respond applies, so a foreign caller gets -EINVAL
    // at once rather than an answer the connection would refuse later.
    int rc = http1::validate_answer(status, h, nh, body, len);
    if (rc < 0)
        return rc;
    if (finished())
        return WEIR_E_GONE;
    if (s.gone.load(std::memory_order_acquire)) {
        // Still post, so the worker releases the exchange and frees the zombie.
        if (Answer *a = answer_pool_.make_drop(x)) {
            answers_.push(a);
            wake();
        }
        return WEIR_E_GONE;
    }
    Answer *a = answer_pool_.make(x, status, h, nh, body, len, flags);
    if (!a)
        return -ENOMEM;
    answers_.push(a);
    wake();
    return 0;
}

int Worker::defer(Exchange *x) {
    if (!inline_ || !owner_thread() || x != cur_ex_ || cur_answered_ || cur_deferred_)
        return -EINVAL;
    cur_deferred_ = true;
    return 0;
}

void Worker::drain_answers() {
    if (answers_.empty())
        return;
    for (MpscNode *n = answers_.take_all(); n;) {
        auto *a = static_cast<Answer *>(n);
        n = n->next;
        apply(a);
    }
}

void Worker::apply(Answer *a) {
    Slot &s = *static_cast<Slot *>(a->x->user);
    int rc = s.conn().respond(a->x, a->status, a->headers, a->num_headers, a->body, a->body_len, a->flags);
    if (rc == -EINVAL) {
        // Checked before posting, so this is a bug, not bad input: the
        // exchange still needs an answer.
        log_once(LOG_BAD_ANSWER, "a deferred answer was refused by the connection; answered 500");
        s.conn().respond(a->x, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_CLOSE);
    }
    mark_dirty(s);
    answer_pool_.give(a);
}

// ---------------------------------------------------------------- shutdown

// Stop accepting: admit what siblings handed over, close the listener, clear
// both doors; ask every connection to finish (idle ones close at once).
void Worker::begin_stop() {
    stop_begun_ = true;
    handoff_door_.ready = true;
    run_batch(handoff_door_, 0, now_ms_, retry_ms_, [this] { return admit_handoff(); });
    door_clear(handoff_door_);
    if (listener_.fd >= 0)
        io_remove_listener(listener_.fd);
    listener_.close_now();
    set_listener_state(ListenerState::Closed);
    door_clear(listen_door_);
    for (Slot *s = live_; s; s = s->live_next) {
        s->conn().close(WEIR_CLOSE_SHUTDOWN);
        mark_dirty(*s);
    }
}

void Worker::stop_tick() {
    if (live_count_ > 0 && now_ms_ >= engine_.grace_deadline_ms()) {
        forced_ = true;
        while (live_) {
            Slot &s = *live_;
            s.conn().close(WEIR_CLOSE_SHUTDOWN);
            close_fd(s, WEIR_CLOSE_SHUTDOWN);
        }
        flush();
    }
    if (live_count_ == 0 && !finished()) {
        finished_.store(true, std::memory_order_release);
        engine_.worker_finished();
    }
}

void Worker::finish_here() {
    if (finished())
        return;
    take_ownership();
    now_ms_ = mono_ms();
    if (!stop_begun_)
        begin_stop();
    flush();
    if (live_count_ > 0)
        forced_ = true;
    while (live_) {
        Slot &s = *live_;
        s.conn().close(WEIR_CLOSE_SHUTDOWN);
        close_fd(s, WEIR_CLOSE_SHUTDOWN);
    }
    drain_answers();
    flush();
    finished_.store(true, std::memory_order_release);
    engine_.worker_finished();
}

// ---------------------------------------------------------------- driven mode

int Worker::poll(Exchange **out, uint32_t max, int timeout_ms) {
    if (finished())
        return WEIR_E_SHUTDOWN;
    if (listener_.state == ListenerState::None && !stop_begun_)
        return WEIR_E_STATE;
    take_ownership();
    accepted_in_poll_ = 0;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : mono_ms() + timeout_ms;
    bool first = true;
    while (ready_head_ == ready_.size() && !finished()) {
        int t = -1;
        if (timeout_ms >= 0) {
            int64_t rel = deadline - mono_ms();
            t = rel > 0 ? static_cast<int>(rel) : 0;
        }
        if (!first && t == 0)
            break;
        first = false;
        pass(t);
    }
    // Owed accepts are taken now, up to max_connections accepts' worth, so
    // one poll does not leave the backlog waiting on the host's handlers.
    while (!finished() && (listen_door_.owed || handoff_door_.owed) && accepted_in_poll_ < max_connections_)
        pass(0);
    size_t avail = ready_.size() - ready_head_;
    if (avail == 0 && finished())
        return WEIR_E_SHUTDOWN;
    size_t n = avail < max ? avail : max;
    for (size_t i = 0; i < n; i++)
        out[i] = ready_[ready_head_ + i];
    ready_head_ += n;
    if (ready_head_ == ready_.size()) {
        ready_.clear();
        ready_head_ = 0;
    }
    return static_cast<int>(n);
}

} // namespace weir
