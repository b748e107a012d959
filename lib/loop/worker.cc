// The worker's pass, its wait and its wake. See docs/engine.md.
#include "loop/worker.h"

#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "loop/engine.h"
#include "loop/hooks.h"
#include "util/thread_token.h"

namespace weir {

LoopHooks &loop_hooks() {
    static LoopHooks hooks;
    return hooks;
}

Worker::Worker(Engine &engine, uint32_t index, std::unique_ptr<Port> port)
    : engine_(engine), port_(std::move(port)), index_(index) {
    const weir_config &c = engine.cfg();
    inline_ = c.mode == WEIR_MODE_INLINE;
    report_gone_ = !inline_ && c.report_gone != 0;
    accept_batch_ = c.accept_batch;
    max_connections_ = c.max_connections;
    max_pipeline_ = c.max_pipeline;
    nodelay_ = c.tcp_nodelay != 0;
    on_conn_ = c.on_conn;
    conn_user_ = c.conn_user;
    trim_ms_ = c.trim_interval_ms == WEIR_TRIM_OFF ? 0 : c.trim_interval_ms;
    timers_.set_duration(TimerKind::Idle, c.idle_timeout_ms);
    timers_.set_duration(TimerKind::Head, c.header_timeout_ms);
    timers_.set_duration(TimerKind::Body, c.body_timeout_ms ? c.body_timeout_ms : c.header_timeout_ms);
    timers_.set_duration(TimerKind::Output, c.write_timeout_ms);
    timers_.set_duration(TimerKind::Handler, c.handler_timeout_ms);
    timers_.set_duration(TimerKind::Held, c.handler_timeout_ms);
    timers_.set_duration(TimerKind::Proxy, c.proxy_timeout_ms); // resolved: never 0
    bind_limits_ = bind_limits_of(c);
    timers_.set_duration(TimerKind::Bind, bind_limits_.tick_ms());
}

Worker::~Worker() {
    // A foreign thread may still be inside push_and_wake when what it pushed
    // was already taken, served, and counted where the destroyer looks (a
    // transplant's source posting an image the ledger already shows adopted;
    // a deferred weir_respond whose answer was written before the shutdown
    // joined the loop). Its wake still reads wake_pending_ and port_: wait
    // until it is out. Every such poster incremented posting_ before its
    // push, and the destroyer saw the push taken (through the ledger's or
    // the join's acquire), so the increment is visible here; the wait is the
    // length of one eventfd write, a yield at most, unless the poster was
    // preempted there. Found by TSan (test_transplant, test_switch).
    // Every handle of this worker turns stale first: a foreign weir_respond
    // from here on finds no table, and one inside it is waited for.
    drop_upgrades();
    tickets_.detach();
    while (posting_.load(std::memory_order_acquire) != 0)
        std::this_thread::yield();
    close_all(WEIR_CLOSE_SHUTDOWN);
    drop_images();
    for (MpscNode *n = answers_.take_all(); n;) {
        auto *a = static_cast<Answer *>(n);
        n = n->next;
        answer_pool_.give(a);
    }
    listener_.close_now();
    inbox_.close_all();
    // The port goes first: once it is gone no operation can name a slot, and
    // the zombies (and anything a host never answered) die with the worker.
    port_.reset();
    for (auto &chunk : chunks_)
        for (uint32_t i = 0; i < kSlotChunk; i++)
            if (chunk[i].in_use) {
                delete chunk[i].leaving;
                chunk[i].session().~Session();
                chunk[i].in_use = false;
            }
}

int Worker::init() {
    pool_ = std::make_unique<ConnPool>(engine_.settings());
    overload_ = Overload(engine_.overload_marks());
    ready_.reserve(256);
    if (int rc = tickets_.attach(this); rc < 0)
        return rc;
    metrics.backend.store(engine_.cfg().backend, std::memory_order_relaxed);
    int rc = port_->init(*this);
    // WEIR_FILE_RANGES=0: file answers read into the output even where the
    // port sends files (the fallback's figures in docs/benchmarks.md).
    const char *env = std::getenv("WEIR_FILE_RANGES");
    file_ranges_ = rc == 0 && port_->file_ranges() && !(env && *env == '0');
    return rc;
}

int Worker::open_listener(const sockaddr_storage &addr, socklen_t len, const ListenOptions &opt) {
    int fd = listener_open(addr, len, opt);
    if (fd < 0)
        return fd;
    int rc = port_->listen(fd);
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

// A listen that failed on a later worker: this one's listener goes too, and
// the worker is as it was before listen (weir_worker_poll says WEIR_E_STATE;
// no door is left ready, which would make every wait return at once).
void Worker::drop_listener() {
    if (listener_.fd >= 0)
        port_->unlisten(listener_.fd);
    listener_.close_now();
    set_listener_state(ListenerState::None);
    door_clear(listen_door_);
}

bool Worker::owner_thread() const { return owner_.load(std::memory_order_relaxed) == thread_token(); }
void Worker::take_ownership() { owner_.store(thread_token(), std::memory_order_relaxed); }

int Worker::own(bool mine) {
    if (inline_)
        return WEIR_E_STATE; // no handle reaches here; the loop's thread owns it for life
    if (mine) {
        take_ownership();
        return 0;
    }
    uintptr_t me = thread_token();
    owner_.compare_exchange_strong(me, 0, std::memory_order_relaxed); // another's turn stays its own
    return 0;
}

void Worker::log_once(uint32_t kind, const char *msg) { engine_.log_once(kind, WEIR_LOG_ERROR, msg); }

void Worker::run() {
    take_ownership();
    while (!finished())
        pass(-1);
}

// One pass: settle what was answered since the last one, wait, let the port
// report (reads run handlers at once; a door is only recorded), then queued
// answers, paused reads, timers, shutdown; then every connection the pass
// touched is settled — its answers written — before the pause tick and one
// batch per door, whose connections are each settled as their handlers
// return (DESIGN.md §4: the answers already held leave before a batch runs).
void Worker::pass(int timeout_ms) {
    now_ms_ = mono_ms();
    flush();
    port_->wait(wait_timeout(timeout_ms));
    now_ms_ = mono_ms();
    metrics.add(M_LOOP_PASSES);
    drain_answers();
    auto transplant_tick = [this] {
        if (ImageSink *t = transplant_to_.load(std::memory_order_acquire); t != transplant_seen_) {
            transplant_seen_ = t; // a new command: weir_engine_transplant, or its end (nullptr)
            detach_all_to(t);
        }
    };
    transplant_tick();
    retry_reads();
    expire_timers();
    if (!stop_begun_ && engine_.stopping())
        begin_stop();
    flush();
    give_tick();
    pause_tick();
    // Again, before the next wait can run a handler: a switch stores its
    // transplant before its give and pause, so a give or pause acted on
    // above (whose waiter may already let clients send) comes with its
    // transplant seen here, not one pass late — when this engine would
    // have served the next requests itself.
    transplant_tick();
    hold_tick();
    overload_tick();
    // The batch's connections count their header deadline from their accept,
    // not from the wait's end: a pass that served thousands of events can
    // take tens of ms, which would cut a new client that much short.
    now_ms_ = mono_ms();
    run_doors();
    flush();
    trim_tick();
    if (stop_begun_)
        stop_tick();
    publish_holding();
}

// The one place the wait is bounded: pending work makes it 0, otherwise the
// earliest of the host's bound, the next timer, the accept retry after a
// resource error, the shutdown grace and the pause linger's deadline. A pause
// command not yet acted on makes it 0 too.
int Worker::wait_timeout(int host_timeout_ms) {
    bool listener_due = !overload_paused_ && (listen_door_.ready || listen_door_.owed);
    if (dirty_ || retry_ || listener_due || handoff_door_.ready || handoff_door_.owed ||
        !answers_.empty() || drops_.load(std::memory_order_relaxed) || ready_head_ < ready_.size() || (!stop_begun_ && engine_.stopping()) || pause_unseen() ||
        engine_.accept_held() != hold_ || engine_.cut_gen() != cut_seen_ || give_pending())
        return 0;
    int64_t deadline = timers_.next_deadline();
    if (listener_.state == ListenerState::Lingering && linger_deadline_ms_ < deadline)
        deadline = linger_deadline_ms_;
    if (listen_door_.resource_wait && listen_door_.retry_at_ms < deadline && !overload_paused_)
        deadline = listen_door_.retry_at_ms;
    deadline = overload_deadline(deadline);
    if (handoff_door_.resource_wait && handoff_door_.retry_at_ms < deadline)
        deadline = handoff_door_.retry_at_ms;
    if (trim_at_ms_ < deadline)
        deadline = trim_at_ms_;
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

void Worker::door_ready() {
    listen_door_.ready = true;
    if (loop_hooks().doors_at_event.load(std::memory_order_relaxed))
        run_doors(); // the mutant: a batch before the events after this one
}

// A store-load pair on each side (Dekker's pattern): the waker pushes, then
// reads-and-sets wake_pending_; the woken worker clears wake_pending_, then
// reads the queues. Either the worker sees the push, or the waker sees the
// flag cleared and wakes it again. The C++ model orders a store before a
// later load of another variable only through seq_cst fences on both sides
// (a seq_cst store followed by an acquire load may be reordered), hence the
// two fences; on x86 and ARMv8 the locked exchange already was one.
void Worker::woken() {
    wake_pending_.store(false, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!handoffs_.empty())
        handoff_door_.ready = true;
}

// Any thread. The count brackets everything the poster does
// to this worker after its node became visible (see ~Worker); it is raised
// before the push, whose release carries it to whoever takes the node.
void Worker::push_and_wake(MpscQueue &q, MpscNode *n) {
    posting_.fetch_add(1, std::memory_order_relaxed);
    q.push(n);
    if (int ms = loop_hooks().post_wake_delay_ms.load(std::memory_order_relaxed))
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    wake();
    posting_.fetch_sub(1, std::memory_order_release);
}

void Worker::wake() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!wake_pending_.exchange(true, std::memory_order_relaxed))
        port_->wake();
}

} // namespace weir
