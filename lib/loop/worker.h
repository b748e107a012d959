// The worker: one event loop, the same whatever the backend.
//
// Worker holds everything that is not I/O: connection slots and their
// sessions, timers, the doors and their accept batches, the hand-off and
// answer queues, the inline/driven dispatch, shutdown, the pause, metrics.
// Its Port (port.h) does the I/O and reports back through the port
// callbacks below. See docs/engine.md for the pass order and a
// connection's life.
//
// The worker is carved by concern, one file each:
//   the loop        worker.cc (the pass, the wait, the wake),
//                   worker_settle.cc (settling, the port's callbacks),
//                   worker_conns.cc (slots, admitting, closing, detaching),
//                   worker_conn_events.cc (the host's connection events),
//                   worker_doors.cc (doors, accept, hand-off),
//                   worker_binding.cc (the deadlines that bind),
//                   worker_stop.cc (shutdown, the driven poll),
//                   worker_pause.cc (the pause linger),
//                   worker_give.cc (the listener a switch moves),
//                   worker_hold.cc (a hot upgrade's hold and cut),
//                   worker_overload.cc (the overload manager's actions),
//                   worker_trim.cc (giving idle memory back);
//   exchanges       the host's side of an exchange, whatever its protocol
//                   (which thread, which ticket, the queue; the session of
//                   the exchange frames it: docs/DESIGN.md §2b):
//                   worker_answers.cc (handlers, the answer queue),
//                   worker_exchange.cc (capi's entry points, by ticket),
//                   worker_stream.cc (streamed answers),
//                   worker_file.cc (file answers),
//                   worker_interim.cc (1xx answers),
//                   worker_body.cc (streamed request bodies),
//                   worker_upgrade.cc (101 and the connection for the host).
// Its pieces: slot.h (a connection's place), image_sink.h (images and
// where they go), ledger.h (transplant's ledger), exchange_api.h (capi's
// exchange entry points).
//
// Threading: everything here runs on the worker's owning thread except
// wake(), post_image(), respond() from a foreign thread, and the metrics.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "loop/answer.h"
#include "loop/doors.h"
#include "loop/exchange_api.h"
#include "loop/image_sink.h"
#include "loop/listener.h"
#include "loop/listener_inbox.h"
#include "loop/metrics.h"
#include "loop/mpsc.h"
#include "loop/overload.h"
#include "loop/port.h"
#include "loop/slot.h"
#include "loop/tickets.h"
#include "loop/binding.h"
#include "loop/timers.h"
#include "loop/trim.h"

namespace weir {

class Engine;
class Worker;

// Slots are made in chunks of this many.
inline constexpr uint32_t kSlotChunk = 64;

// weir_config's binding deadlines, WEIR_DEADLINE_OFF as 0 (worker_binding.cc).
BindLimits bind_limits_of(const weir_config &c);

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

class Worker final : public ImageSink {
  public:
    Worker(Engine &engine, uint32_t index, std::unique_ptr<Port> port);
    ~Worker();
    Worker(const Worker &) = delete;
    Worker &operator=(const Worker &) = delete;

    // Control thread, before the loop runs.
    int init();
    int open_listener(const sockaddr_storage &addr, socklen_t len, const ListenOptions &opt);
    // A listening socket the host gave (weir_engine_listen_fds): owned from now.
    int adopt_listener(int fd);
    void drop_listener();

    // The inline thread's body: passes until the worker finishes.
    void run();
    // Driven mode (weir_worker_poll).
    int poll(weir_exchange **out, uint32_t max, int timeout_ms);
    // weir_worker_wake, any thread: the poll under way (or the next) returns
    // after its pass.
    void host_wake() {
        host_woken_.store(true, std::memory_order_release);
        wake();
    }
    // weir_worker_own, the driving thread between its polls: it becomes the
    // worker's thread (as a poll makes it) or stops being it, so that no
    // thread is until the next poll and every answer is posted.
    int own(bool mine);
    // Control thread, once no thread runs the loop any more (destroy): closes
    // what is left, counted as shutdown.
    void finish_here();

    // Answers, given the ticket the caller resolved (any thread). respond()
    // claims it, then picks the direct path on the owning thread and the
    // queue elsewhere.
    int respond(TicketRef &r, int status, const weir_header_t *h, size_t nh, const void *body, size_t len,
                uint32_t flags);
    int defer(uint64_t h);
    // Streamed answers (worker_stream.cc), any thread, as respond().
    int stream_start(TicketRef &r, int status, const weir_header_t *h, size_t nh, uint64_t length,
                     uint32_t flags);
    int stream_write(TicketRef &r, const void *p, size_t n);
    int stream_end(TicketRef &r, const weir_header_t *tr, size_t nt);
    int64_t stream_room_now(TicketRef &r);
    int stream_abort(TicketRef &r);
    // Upgrades (worker_upgrade.cc): the 101, then the connection for the host.
    int upgrade(TicketRef &r, const weir_header_t *h, size_t nh, bool raw);
    int upgrade_take(TicketRef &r, int *fd, void *buf, size_t cap, size_t *len);
    int respond_file(TicketRef &r, int status, const weir_header_t *h, size_t nh, int fd, uint64_t off,
                     uint64_t len, uint32_t flags);
    // An interim (1xx) answer (worker_interim.cc), any thread, as respond();
    // the exchange stays the host's.
    int interim(TicketRef &r, int status, const weir_header_t *h, size_t nh);
    // A streamed request body (worker_body.cc): the owning thread only.
    int64_t body_read(TicketRef &r, void *buf, size_t cap);
    // Any thread: whether the caller is the thread that runs the loop now.
    bool owner_thread() const;
    // Owning thread: the exchange a live handle names (tests).
    Exchange *live_exchange(uint64_t h) const { return tickets_.live(h); }

    // Moving connections (DESIGN.md §6). Any thread: an image joins the
    // hand-off door and is admitted like an accepted connection.
    void post_image(ImageNode *n) override;
    // Owning thread: every open connection is held and, at its next request
    // boundary, detached and posted to `to` (another worker of this or another
    // engine, any backend, or a handover's sender). nullptr calls it off:
    // held connections parse on.
    void detach_all_to(ImageSink *to);
    // Any thread: the engine's transplant asks this worker to detach
    // everything to `to` (acted on in its next pass); nullptr ends it.
    void transplant_to(ImageSink *to) {
        transplant_to_.store(to, std::memory_order_release);
        wake();
    }
    // A switch's listener move (worker_give.cc, docs/transplant.md). Any
    // thread: `to` is told a listener is coming (expect), this worker gives
    // its listener to `to` in its next pass (give_to; nullptr calls it off).
    void expect_listener() { inbox_.promised.fetch_add(1, std::memory_order_acq_rel); }
    void give_listener_to(Worker *to);
    void listener_not_coming();
    bool receive_listener(int fd);
    // Any thread: give commands this worker has not finished with (it may
    // still call into the taker). weir_engine_pause counts such a worker as
    // not closed, so a host that destroys the taker's engine once the pause
    // returned never does so under this worker's call.
    uint32_t gives_open() const { return gives_open_.load(std::memory_order_acquire); }
    // Any thread: what a handover's sender reads (worker_hold.cc). As of
    // this worker's last pass: whether it acted on the engine's accept hold,
    // and how many connections it still held (open or on their way out).
    bool hold_seen() const { return pub_hold_.load(std::memory_order_acquire); }
    uint64_t holding() const { return pub_holding_.load(std::memory_order_acquire); }

    // Any thread: makes the loop's wait return.
    void wake();
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    bool forced() const { return forced_; }
    uint32_t index() const { return index_; }
    uint64_t open_connections() const { return metrics.get(M_CONNECTIONS_OPEN); }
    uint64_t slots_in_use() const { return slots_in_use_; } // owning thread (tests)
    size_t states_in_use() const { return pool_->in_use(); } // connection buffers held; owning thread (tests)
    int listen_fd() const { return listener_.fd; }
    bool inline_mode() const { return inline_; } // the port picks its ring's tier by it
    Port &port() { return *port_; }
    // Any thread: the listener's state as the worker last published it.
    ListenerState listener_state() const { return pub_state_.load(std::memory_order_acquire); }
    int listener_fd() const { return pub_fd_.load(std::memory_order_acquire); } // with the state

    WorkerMetrics metrics;

    // ---- the port's callbacks (owning thread; worker_settle.cc)
    void door_ready(); // the listener may hold connections
    void woken();      // the wake fired
    // Where the Conn wants its next bytes, lent until input(); none (the
    // Conn is full, closing or out of memory) pauses input until want_read().
    iovec lend_input(Slot &s) {
        iovec sp = s.session().read_space();
        if (sp.iov_len == 0)
            no_input_room(s);
        return sp;
    }
    // n bytes landed in the lent input (0: nothing came). Returns whether
    // reading may go on.
    bool input(Slot &s, size_t n);
    // Bytes in a buffer the port lends: returns how many the Conn took (the
    // port keeps the rest and offers it again after want_read()).
    size_t input_lent(Slot &s, const char *p, size_t n);
    // Bytes that arrived for a slot released into an image (a recv the port
    // had in flight, or bytes it held): they follow the image's unread bytes.
    void input_late(Slot &s, const char *p, size_t n);
    // Input ended: err 0 for the peer's FIN, else its errno.
    void input_end(Slot &s, int err);
    // Up to max iovecs of output to write, lent until written().
    size_t lend_output(Slot &s, iovec *iov, size_t max) { return s.session().output_iov(iov, max); }
    // n >= 0 bytes of the lent output were written; n < 0: -errno.
    void written(Slot &s, ssize_t n);
    // Once every byte lent_output gave was written: the file range that
    // follows them (a file answer's body, Port::file_ranges), lent until
    // file_written(); false when there is none now.
    bool lend_file(Slot &s, FileRange &r) { return s.session().output_file(r); }
    // The lent range comes back: n >= 0 bytes of it reached the socket;
    // n < 0: -errno: -ENODATA the file ended first (it shrank: the
    // connection aborts, WEIR_CLOSE_IO_ERROR); -EINVAL, -ENOSYS, -EOPNOTSUPP
    // the kernel will not send this file so (the rest of the answer is read
    // into the output, counted in LoopHooks::file_fallbacks); else a write
    // error, as written()'s.
    void file_written(Slot &s, ssize_t n);
    // The port posted / completed a kernel operation naming s.
    void op_begin(Slot &s) { s.ops++; }
    void op_end(Slot &s);
    void log_once(uint32_t kind, const char *msg);

  private:
    friend class Engine;
    // worker.cc
    void pass(int timeout_ms);
    int wait_timeout(int host_timeout_ms);
    void take_ownership();
    // worker_settle.cc
    void flush();
    void settle(Slot &s);
    void settle_now(Slot &s);
    void no_input_room(Slot &s);
    void mark_dirty(Slot &s);
    void unlink_dirty(Slot &s);
    void retry_reads();
    void expire_timers();
    void bind_settle(Slot &s, ConnWait w); // worker_binding.cc
    void bind_expired(Slot &s);
    // worker_conn_events.cc: cfg.on_conn, told where each close is counted.
    // Off (NULL): one untaken branch per accept and per close.
    void conn_opened(Slot &s) {
        if (on_conn_)
            conn_event(s, WEIR_CONN_OPEN, 0);
    }
    void conn_closed(Slot &s, uint32_t reason) {
        if (on_conn_)
            conn_event(s, WEIR_CONN_CLOSE, reason);
    }
    // A connection closed without a slot of this worker: id 0 is one that
    // was accepted and never admitted (it opens and closes here, at once).
    // fd (still open) is asked its peer when the accept gave none.
    void conn_closed(uint64_t id, uint32_t reason, const sockaddr_storage &peer, socklen_t len, int fd = -1) {
        if (on_conn_)
            conn_event_unslotted(id, reason, peer, len, fd);
    }
    void conn_event(Slot &s, uint32_t event, uint32_t reason);
    void conn_event_unslotted(uint64_t id, uint32_t reason, const sockaddr_storage &peer, socklen_t len, int fd);
    // worker_conns.cc
    void admit(ConnImage &img);
    void close_conn(Slot &s, uint32_t reason);
    void close_lingering(Slot &s, bool unread, bool until_acked = false);
    void close_all(uint32_t reason);
    void unlink_live(Slot &s);
    void let_go(Slot &s);
    bool detach(Slot &s);
    void leave(Slot &s, ImageNode *n, ImageSink *to);
    void hand_over(Slot &s);
    void fold(Slot &s);
    void count_proxy(Slot &s);
    Slot *alloc_slot();
    void free_slot(Slot &s);
    void free_if_spent(Slot &s);
    // worker_answers.cc
    void dispatch(Slot &s);
    bool ready_room();
    void call_handler(Exchange *x, uint64_t h);
    void drain_answers();
    void apply(Answer *a);
    void post_drop(Exchange *x, bool abort);
    void expire_handlers(Slot &s);
    void held_from(Slot &s, Exchange *x);
    void expire_held(Slot &s);
    // worker_stream.cc
    int stream_room(Ticket &t, size_t n);
    int post_foreign(Exchange *x, AnswerKind kind, int status, const weir_header_t *h, size_t nh, Ticket *t);
    void apply_stream(Answer *a);
    void apply_file(Answer *a);
    void apply_upgrade(Answer *a);
    void apply_interim(Answer *a);
    // Whether an answer on the owning thread may be applied at once: no
    // interim answer of its exchange waits in the queue (worker_interim.cc).
    static bool nothing_posted(TicketRef &r);
    void report_gone(Slot &s);
    void report_exchange_gone(Exchange *x);
    bool upgrade_detach(Slot &s);
    void upgrade_deliver(Slot &s, ImageNode *n);
    void hand_back(uint64_t h);
    void body_hand_back(Slot &s);
    void body_refuse(Slot &s, Exchange *x, uint64_t h);
    bool graceful_stop(uint32_t reason) const;
    void drop_upgrades();
    void publish_streams(Slot &s);
    bool streams_have_room(Slot &s);
    // worker_doors.cc
    void run_doors();
    Take accept_one(bool drain);
    Take accepted(Take t, Accepted &a);
    Take admit_handoff();
    bool hand_off(const Accepted &a);
    void drop_images();
    void drop_image(ImageNode *n, uint32_t reason);
    void answer_over_limit(int fd);
    void refuse(ImageNode *n, uint32_t reason);
    // worker_stop.cc
    void begin_stop();
    void drop_unadmitted();
    void stop_tick();
    void finished_now();

    // ---- the overload manager (worker_overload.cc)
    void overload_tick();
    void overload_accepting();
    void overload_refuse(Slot &s);
    void overload_sweep();
    bool overload_idle_close(Slot &s);
    int64_t overload_deadline(int64_t deadline) const;

    // ---- a handover's accept hold and deadline (worker_hold.cc)
    void hold_tick();
    void publish_holding();

    // Memory that follows the load (worker_trim.cc).
    void trim_tick();

    // ---- the pause linger (worker_pause.cc, DESIGN.md §5)
    bool pause_unseen() const;
    void pause_tick(); // in the pass, before the doors
    void pause_begin();
    void pause_resume();
    void linger_close();
    void set_listener_state(ListenerState s);
    void pause_failure(uint32_t metric, uint32_t log_kind, const char *what, int rc);

    // ---- the listener a switch moves (worker_give.cc)
    void give_tick(); // in the pass, before the pause tick
    bool give_pending() const;
    void give_out(Worker *to);
    void take_in(int fd);
    void drain_and_close(int fd);
    void reopen_listener();
    ListenerInbox inbox_;
    std::atomic<Worker *> give_to_{nullptr};
    std::atomic<uint32_t> gives_open_{0}; // commands given, not yet acted on or called off
    bool reopen_owed_ = false; // a resume that waits for a promised listener
    bool taken_in_ = false;    // this pass adopted one: the engine's pause applies to it

    Engine &engine_;
    std::unique_ptr<Port> port_;
    int64_t now_ms_ = 0;
    uint32_t index_;
    bool inline_ = true;
    bool report_gone_ = false; // cfg.report_gone (driven): dying exchanges come back in a poll
    bool file_ranges_ = false; // file answers leave as ranges the port sends (Port::file_ranges)
    uint32_t accept_batch_ = 16;
    uint32_t max_connections_ = 10000;
    uint32_t max_pipeline_ = 64;
    bool nodelay_ = true;
    uint32_t retry_ms_ = 50;
    weir_conn_fn on_conn_ = nullptr; // cfg.on_conn
    void *conn_user_ = nullptr;

    std::unique_ptr<ConnPool> pool_;
    TrimPolicy trim_;
    uint32_t trim_ms_ = 0;               // the window; 0: no trim (WEIR_TRIM_OFF)
    int64_t trim_at_ms_ = INT64_MAX;     // the window's end; INT64_MAX: no window open
    size_t heap_freed_ = 0;              // freed to the allocator since the last heap trim
    std::vector<std::unique_ptr<Slot[]>> chunks_;
    Slot *free_slots_ = nullptr;
    uint64_t slots_in_use_ = 0;
    Slot *live_ = nullptr; // open fds
    uint64_t live_count_ = 0;
    Slot *dirty_ = nullptr;
    Slot *dirty_tail_ = nullptr;
    Slot *settling_ = nullptr; // what settle() works on: its own callbacks need no re-settle
    Slot *retry_ = nullptr;
    ImageSink *detach_to_ = nullptr;
    std::atomic<ImageSink *> transplant_to_{nullptr};
    ImageSink *transplant_seen_ = nullptr; // the command last acted on
    uint64_t leaving_count_ = 0;            // slots whose image waits for its operations

    // A handover (worker_hold.cc): the accept hold acted on, the deadline
    // cut last acted on, and what the sender reads.
    bool hold_ = false;
    uint64_t cut_seen_ = 0;
    std::atomic<bool> pub_hold_{false};
    std::atomic<uint64_t> pub_holding_{0};

    Timers timers_;
    BindLimits bind_limits_;
    Listener listener_;
    Door listen_door_;
    Door handoff_door_;
    MpscQueue handoffs_; // ImageNodes
    MpscNode *handoff_local_ = nullptr; // taken from handoffs_, not yet admitted
    MpscQueue answers_;
    AnswerPool answer_pool_;
    // Foreign answers to closed connections, linked through
    // Exchange::next_drop: a stack pushed with a CAS and taken whole, as
    // MpscQueue (so no ABA), and in no order (each only releases its exchange).
    std::atomic<Exchange *> drops_{nullptr};
    std::atomic<bool> wake_pending_{false};
    std::atomic<bool> host_woken_{false}; // weir_worker_wake: poll returns after its pass
    // Foreign threads between a push onto handoffs_ or answers_ and the end
    // of the wake after it (push_and_wake); ~Worker waits for 0.
    std::atomic<uint32_t> posting_{0};
    void push_and_wake(MpscQueue &q, MpscNode *n);
    std::atomic<uintptr_t> owner_{0};

    // inline handler bookkeeping
    Exchange *cur_ex_ = nullptr;
    bool cur_answered_ = false;
    bool cur_deferred_ = false;

    // The handles of this worker's exchanges; detached first in ~Worker.
    TicketTable tickets_;

    // Upgraded connections handed to the host and not yet taken (handles).
    std::vector<uint64_t> upgraded_;

    // driven mode: handles of parsed requests not yet returned by poll
    std::vector<uint64_t> ready_;
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
    std::atomic<int> pub_fd_{-1};

    // The overload manager: its level, whether it paused accepting, and the
    // keep-alive cuts (ConnPool::keep_alive_cuts) already counted.
    Overload overload_;
    bool overload_paused_ = false;
    uint64_t ka_cuts_seen_ = 0;

    bool stop_begun_ = false;
    bool forced_ = false;
    std::atomic<bool> finished_{false};
};

} // namespace weir
