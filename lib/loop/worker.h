// The worker: one event loop, shared by both backends.
//
// Worker holds everything that is not I/O: connection slots and their Conns,
// timers, the doors and their accept batches, the hand-off and answer queues,
// the inline/driven dispatch, shutdown, metrics. A backend (EpollWorker, later
// the io_uring one) derives from it and implements the io_* hooks below; it
// calls back into the worker (conn_input, conn_output, listener_ready,
// on_wake) as its I/O completes. See docs/engine.md for the pass order.
//
// Threading: everything here runs on the worker's owning thread except
// wake(), post_answer()/respond() from a foreign thread, and the metrics.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "conn/conn.h"
#include "loop/answer.h"
#include "loop/doors.h"
#include "loop/listener.h"
#include "loop/metrics.h"
#include "loop/mpsc.h"
#include "loop/timers.h"

namespace weir {

class Engine;
class Worker;

// One connection's place in its worker. Slots live in fixed chunks so their
// addresses (given to the backend as event tags and to exchanges as
// Exchange::user) never move.
struct Slot {
    alignas(Conn) unsigned char mem[sizeof(Conn)];
    Conn &conn() { return *std::launder(reinterpret_cast<Conn *>(mem)); }

    Worker *worker = nullptr; // fixed at creation: foreign threads read it
    int fd = -1;              // -1: closed (a zombie while outstanding() > 0)
    bool in_use = false;
    bool dirty = false;        // on the worker's settle list
    bool read_blocked = false; // stopped reading because read_space() was empty
    bool retry_queued = false;
    bool eof = false;
    bool broken = false;       // a read error (reset): close once the flush is tried
    bool out_armed = false;    // waiting for writability; output is held until it comes
    bool out_registered = false; // backend's own: writability is being watched
    bool peer_hup = false;       // backend's own: the peer's FIN or an error was reported
    bool activity = false;     // bytes moved since the last settle
    bool progress = false;     // output bytes written since the last settle
    bool live_linked = false;
    std::atomic<bool> gone{false}; // fd closed: foreign answers are dropped
    TimerNode timer;
    Slot *next_dirty = nullptr;
    Slot *next_retry = nullptr;
    Slot *live_prev = nullptr;
    Slot *live_next = nullptr;
    Slot *next_free = nullptr;
    sockaddr_storage peer{};
    socklen_t peer_len = 0;
    Conn::Counters folded{};
};

// A connection passed to a sibling (over max_connections here, room there).
struct Handoff : MpscNode {
    int fd = -1;
    sockaddr_storage peer{};
    socklen_t peer_len = 0;
};

// Kinds of failure logged once per engine.
enum LogKind : uint32_t {
    LOG_ACCEPT_RESOURCE,
    LOG_ACCEPT_OTHER,
    LOG_BACKEND,
    LOG_NO_ANSWER,
    LOG_BAD_ANSWER,
    LOG_NO_MEMORY,
    LOG_PAUSE_SETSOCKOPT,
    LOG_PAUSE_SYSCTL,
    LOG_PAUSE_REOPEN,
    LOG_KINDS
};

class Worker {
  public:
    Worker(Engine &engine, uint32_t index);
    virtual ~Worker();
    Worker(const Worker &) = delete;
    Worker &operator=(const Worker &) = delete;

    // Control thread, before the loop runs.
    int init();
    int open_listener(const sockaddr_storage &addr, socklen_t len, const ListenOptions &opt);

    // The inline thread's body: passes until the worker finishes.
    void run();
    // Driven mode (weir_worker_poll).
    int poll(Exchange **out, uint32_t max, int timeout_ms);
    // Control thread, once no thread runs the loop any more (destroy): closes
    // what is left, counted as shutdown.
    void finish_here();

    // Answers. respond() picks the direct path on the owning thread and the
    // queue elsewhere.
    int respond(Exchange *x, int status, const weir_header_t *h, size_t nh, const void *body, size_t len,
                uint32_t flags);
    int defer(Exchange *x);

    // Any thread: makes the loop's wait return.
    void wake();
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    bool forced() const { return forced_; }
    uint32_t index() const { return index_; }
    uint64_t open_connections() const { return metrics.get(M_CONNECTIONS_OPEN); }
    int listen_fd() const { return listener_.fd; }
    // Any thread: the listener's state as the worker last published it.
    ListenerState listener_state() const { return pub_state_.load(std::memory_order_acquire); }

    WorkerMetrics metrics;

  protected:
    // ---- the backend interface (owning thread unless said otherwise)
    virtual int io_init() = 0;                 // after wake_fd_ exists
    virtual int io_add_listener(int fd) = 0;   // edge-triggered readiness -> listener_ready()
    virtual void io_remove_listener(int fd) = 0;
    virtual int io_add_conn(Slot &s) = 0;      // start watching s.fd
    virtual void io_forget_conn(Slot &s) = 0;  // s.fd is about to be closed
    // Waits up to timeout_ms (-1 forever, 0 not at all) and reports what
    // happened through the callbacks below. Must not close anything.
    virtual void io_wait(int timeout_ms) = 0;
    // Reads into s.conn().read_space() until the socket or the Conn has no more
    // room, reporting each result through conn_input(). May complete later
    // (a completion backend submits here and reports from io_wait).
    virtual void io_read(Slot &s) = 0;
    // Writes s.conn().output_iov() (one gathered write per call where it can, never raising SIGPIPE),
    // reporting through conn_output(); arms writability on a partial write.
    virtual void io_write(Slot &s) = 0;

    // ---- callbacks for the backend
    void listener_ready() { listen_door_.ready = true; }
    void on_wake(); // the wake fd fired (the backend drained it)
    // n > 0: bytes landed in read_space(); 0: end of file; < 0: -errno.
    // Returns whether reading may go on.
    bool conn_input(Slot &s, ssize_t n);
    // n >= 0: bytes written; < 0: -errno.
    void conn_output(Slot &s, ssize_t n);
    void conn_writable(Slot &s); // the backend saw writability
    void log_once(uint32_t kind, const char *msg);

    Engine &engine_;
    int wake_fd_ = -1;
    int64_t now_ms_ = 0;

  private:
    friend class Engine;
    void pass(int timeout_ms);
    int wait_timeout(int host_timeout_ms);
    void flush();
    void settle(Slot &s);
    void mark_dirty(Slot &s);
    void dispatch(Slot &s);
    void call_handler(Exchange *x);
    void drain_answers();
    void apply(Answer *a);
    void retry_reads();
    void expire_timers();
    void run_doors();
    Take accept_one();
    Take admit_handoff();
    void admit(int fd, const sockaddr_storage &peer, socklen_t len);
    bool hand_off(int fd, const sockaddr_storage &peer, socklen_t len);
    void close_fd(Slot &s, uint32_t reason);
    static void drain_before_close(int fd);
    void fold(Slot &s);
    Slot *alloc_slot();
    void free_slot(Slot &s);
    void begin_stop();
    void stop_tick();
    bool owner_thread() const;
    void take_ownership();
    bool inline_mode() const { return inline_; }

    // ---- the pause linger (worker_pause.cc, DESIGN.md §4)
    bool pause_unseen() const;
    void pause_tick(); // in the pass, before the doors
    void pause_begin();
    void pause_resume();
    void linger_close();
    void set_listener_state(ListenerState s);
    void pause_failure(uint32_t metric, uint32_t log_kind, const char *what, int rc);

    uint32_t index_;
    bool inline_ = true;
    uint32_t accept_batch_ = 16;
    uint32_t max_connections_ = 10000;
    bool nodelay_ = true;
    uint32_t retry_ms_ = 50;

    std::unique_ptr<ConnPool> pool_;
    std::vector<std::unique_ptr<Slot[]>> chunks_;
    Slot *free_slots_ = nullptr;
    Slot *live_ = nullptr; // open fds
    uint64_t live_count_ = 0;
    uint64_t next_id_ = 0;
    Slot *dirty_ = nullptr;
    Slot *dirty_tail_ = nullptr;
    Slot *retry_ = nullptr;

    Timers timers_;
    Listener listener_;
    Door listen_door_;
    Door handoff_door_;
    MpscQueue handoffs_;
    MpscNode *handoff_local_ = nullptr; // taken from handoffs_, not yet admitted
    MpscQueue answers_;
    AnswerPool answer_pool_;
    std::atomic<bool> wake_pending_{false};
    std::atomic<uintptr_t> owner_{0};

    // inline handler bookkeeping
    Exchange *cur_ex_ = nullptr;
    bool cur_answered_ = false;
    bool cur_deferred_ = false;

    // driven mode: parsed requests not yet returned by poll
    std::vector<Exchange *> ready_;
    size_t ready_head_ = 0;
    uint64_t accepted_in_poll_ = 0;

    // pause: the engine's command generation last acted on, the linger's
    // deadline (CLOCK_MONOTONIC ms), whether the listener was opened with
    // TCP_DEFER_ACCEPT and whether this linger cleared it.
    uint64_t pause_seen_ = 0;
    int64_t linger_deadline_ms_ = 0;
    bool listener_deferred_ = false;
    bool defer_cleared_ = false;
    std::atomic<ListenerState> pub_state_{ListenerState::None};

    bool stop_begun_ = false;
    bool forced_ = false;
    std::atomic<bool> finished_{false};
};

// Creates the backend's worker (lib/epoll, lib/uring). nullptr when out of memory.
Worker *make_epoll_worker(Engine &engine, uint32_t index);

} // namespace weir
