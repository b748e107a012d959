// The io_uring port: the ring, its tier, the wait and the wake. Accept is in
// uring_accept.cc, a connection's recv, send and close in uring_conn.cc.
// docs/uring.md.
//
// One submit-and-wait per pass: everything the pass queued (sends, recv
// re-arms, closes) goes to the kernel in the enter that waits for the next
// completions. Two exceptions, both for what a client sees: a door's batch
// pushes each admission's answer before it takes the next connection (its
// answer leaves when its handler returns, DESIGN.md §4), and a full SQ is
// submitted at once.
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "loop/engine.h" // mono_ms
#include "uring/uring_impl.h"
#include "util/thread_token.h"
#include "uring/uring_port.h"
#include "uring/uring_probe.h"
#include "weir.h"

namespace weir {

namespace {

constexpr unsigned kSqEntries = 1024;
constexpr unsigned kCqEntries = 8192; // a burst of accepts and recvs of 1,000s of connections fits
constexpr uint32_t kBuffers = 512;
constexpr uint32_t kBufferSize = 8192;
constexpr uint16_t kGroup = 0;
constexpr unsigned kGather = 32;
constexpr unsigned kGatherUs = 50;
// The gather pays for itself only when a window collects many connections'
// requests: a wait that holds a lone request for kGatherUs adds that much to
// its client's latency, and a busy machine stretches the timer's wake far
// past it (measured in docs/uring.md: a keep-alive client with one request in
// flight got 4-8x fewer answers a second with every wait gathering). So a
// wait gathers only after a pass that reaped at least this many recvs.
constexpr unsigned kGatherFrom = 8;

} // namespace

UringHooks &uring_hooks() {
    static UringHooks hooks;
    return hooks;
}

int make_uring_port(std::unique_ptr<Port> *out) {
    if (uring_caps().missing)
        return WEIR_E_UNAVAILABLE;
    out->reset(new (std::nothrow) UringPort);
    return *out ? 0 : -ENOMEM;
}

UringPort::~UringPort() {
    if (ring_up_) {
        // Closes queued by a last close_all go out; the ring's exit cancels
        // whatever is still armed.
        if (ring_thread() && io_uring_sq_ready(&ring_) > 0)
            io_uring_submit(&ring_);
        // The ring goes first: the buffers may be freed only once no recv
        // can select one (its exit cancels them and drops the registration).
        io_uring_queue_exit(&ring_);
        bufs_.forget_ring();
        bufs_.destroy();
    }
    free_pipes();
    for (Accepted &a : accepted_)
        if (a.fd >= 0)
            ::close(a.fd);
    while (free_ctx_) {
        SendCtx *c = free_ctx_;
        free_ctx_ = c->next;
        delete c;
    }
    if (wake_fd_ >= 0)
        ::close(wake_fd_);
}

// The tier: DEFER_TASKRUN where one thread runs the loop for its whole life
// (inline mode), else COOP_TASKRUN (a driven host may poll from any thread,
// one at a time), else neither. A DEFER ring starts disabled and is enabled
// by its first wait, so the loop's thread becomes its single issuer.
int UringPort::init(Worker &w) {
    w_ = &w;
    const UringCaps &caps = uring_caps();
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0)
        return -errno;
    io_uring_params p;
    int rc = -EINVAL;
    bool defer_ok = (caps.probed & WEIR_URING_F_DEFER_TASKRUN) && w.inline_mode();
    int first = defer_ok ? 0 : 1;
    // A measurement knob (docs/uring.md): WEIR_URING_TIER=coop or basic.
    if (const char *t = std::getenv("WEIR_URING_TIER"))
        first = std::strcmp(t, "coop") == 0 ? 1 : std::strcmp(t, "basic") == 0 ? 2 : first;
    for (int attempt = first; attempt < 3; attempt++) {
        std::memset(&p, 0, sizeof p);
        p.flags = IORING_SETUP_CQSIZE;
        p.cq_entries = kCqEntries;
        if (attempt == 0)
            p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
        else if (attempt == 1 && (caps.probed & WEIR_URING_F_COOP_TASKRUN))
            p.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
        else
            attempt = 2;
        uint32_t sq = uring_hooks().sq_entries.load();
        rc = uring_hooks().setup_enomem.load() ? -ENOMEM : io_uring_queue_init_params(sq ? sq : kSqEntries, &ring_, &p);
        if (rc == 0) {
            tier_ = attempt == 0 ? WEIR_URING_TIER_DEFER : attempt == 1 ? WEIR_URING_TIER_COOP : WEIR_URING_TIER_BASIC;
            break;
        }
        if (rc == -ENOMEM)
            break; // not the flags: memory
    }
    if (rc < 0) {
        char msg[256];
        if (rc == -ENOMEM) {
            // Kernels that charge ring memory to RLIMIT_MEMLOCK (before 5.12)
            // refuse here once the user's rings exceed it.
            rlimit rl{};
            getrlimit(RLIMIT_MEMLOCK, &rl);
            size_t per = kSqEntries * sizeof(io_uring_sqe) + kCqEntries * sizeof(io_uring_cqe) + 4096;
            unsigned long long lim = rl.rlim_cur;
            std::snprintf(msg, sizeof msg,
                          "io_uring: no memory for a ring of %zu KiB: RLIMIT_MEMLOCK is %llu KiB, which funds at "
                          "most %llu workers (raise it with ulimit -l, or run on epoll)",
                          per / 1024, lim / 1024, static_cast<unsigned long long>(lim / per));
        } else {
            std::snprintf(msg, sizeof msg, "io_uring: io_uring_setup failed: %s", strerrorname_np(-rc));
        }
        w.log_once(LOG_BACKEND, msg);
        return rc;
    }
    ring_up_ = true;
    enabled_ = tier_ != WEIR_URING_TIER_DEFER;
    used_ = WEIR_URING_F_MULTISHOT_ACCEPT | WEIR_URING_F_MULTISHOT_RECV | WEIR_URING_F_BUF_RING |
            WEIR_URING_F_NODROP |
            (caps.probed & (WEIR_URING_F_EXT_ARG | WEIR_URING_F_CQE_SKIP | WEIR_URING_F_MIN_TIMEOUT));
    if (const char *g = std::getenv("WEIR_URING_GATHER"); g && *g == '0')
        used_ &= ~WEIR_URING_F_MIN_TIMEOUT; // measurement knobs (docs/uring.md)
    else if (g && !std::strcmp(g, "always"))
        gather_always_ = true;
    if (tier_ == WEIR_URING_TIER_DEFER)
        used_ |= WEIR_URING_F_SINGLE_ISSUER | WEIR_URING_F_DEFER_TASKRUN;
    else if (tier_ == WEIR_URING_TIER_COOP)
        used_ |= WEIR_URING_F_COOP_TASKRUN;
    // File answers are spliced where the kernel has IORING_OP_SPLICE (5.7
    // on; this backend needs newer), else read into the output.
    if (io_uring_probe *pr = io_uring_get_probe_ring(&ring_)) {
        splice_ok_ = io_uring_opcode_supported(pr, IORING_OP_SPLICE);
        io_uring_free_probe(pr);
    }
    uint32_t nbuf = uring_hooks().buffers.load();
    rc = bufs_.init(&ring_, kGroup, nbuf ? nbuf : kBuffers, kBufferSize);
    if (rc < 0) {
        w.log_once(LOG_BACKEND, "io_uring: cannot register the provided-buffer ring");
        return rc;
    }
    try {
        deferred_.reserve(64);
        parked_.reserve(bufs_.count());
        nobufs_.reserve(64);
    } catch (...) {
        return -ENOMEM;
    }
    w.metrics.uring_tier.store(tier_, std::memory_order_relaxed);
    w.metrics.uring_probed.store(caps.probed, std::memory_order_relaxed);
    w.metrics.uring_used.store(used_, std::memory_order_relaxed);
    arm_wake();
    return 0;
}

bool UringPort::ring_thread() const { return tier_ != WEIR_URING_TIER_DEFER || (enabled_ && ring_token_ == thread_token()); }

// An SQE, submitting a full SQ first. nullptr only when the SQ is full and
// cannot be submitted from this thread (a DEFER ring off its loop's thread).
io_uring_sqe *UringPort::sqe() {
    io_uring_sqe *q = io_uring_get_sqe(&ring_);
    if (q || !ring_thread())
        return q;
    w_->metrics.add(M_URING_SQ_FULL);
    w_->metrics.add(M_URING_ENTERS);
    io_uring_submit(&ring_);
    return io_uring_get_sqe(&ring_);
}

// One enter: what is queued goes in, and (wait_nr 1) the wait for the next
// completion up to timeout_ms (-1: none). Returns the enter's result.
int UringPort::submit(unsigned wait_nr, int timeout_ms) {
    if (!enabled_) {
        // liburing 2.3 declares io_uring_enable_rings but does not export it.
        int rc = uring_register(ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0);
        if (rc < 0) {
            w_->log_once(LOG_BACKEND, "io_uring: cannot enable the ring");
            return rc;
        }
        enabled_ = true;
        ring_token_ = thread_token();
    }
    w_->metrics.add(M_URING_ENTERS);
    if (wait_nr == 0)
        return io_uring_submit_and_get_events(&ring_);
    if (used_ & WEIR_URING_F_MIN_TIMEOUT) {
        bool busy = pass_recvs_ >= kGatherFrom || gather_always_;
        (busy ? uring_hooks().gathers : uring_hooks().plain_waits).fetch_add(1, std::memory_order_relaxed);
        if (busy)
            return gather(timeout_ms);
    }
    io_uring_cqe *cqe = nullptr;
    if (timeout_ms < 0)
        return io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, nullptr, nullptr);
    __kernel_timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000LL};
    return io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
}

// The wait that gathers (IORING_FEAT_MIN_TIMEOUT): up to kGather
// completions, or whatever came within kGatherUs of the first, or one after
// that, bounded by timeout_ms. Under load a pass then serves many
// connections for one enter; only a pass after a busy one gathers
// (kGatherFrom), so a light loop wakes at its first completion.
// liburing 2.3 knows neither the feature nor the field (its `pad`), so the
// SQ tail is published here as its __io_uring_flush_sq does.
int UringPort::gather(int timeout_ms) {
    io_uring_sq &sq = ring_.sq;
    if (sq.sqe_head != sq.sqe_tail) {
        sq.sqe_head = sq.sqe_tail;
        io_uring_smp_store_release(sq.ktail, sq.sqe_tail);
    }
    unsigned to_submit = *sq.ktail - io_uring_smp_load_acquire(sq.khead);
    // Always a bound: without one, this kernel (6.18) ends a gathering wait
    // that found nothing with -ETIME at the end of the gather window, and an
    // idle loop would spin at ~10,000 enters a second. An hour stands for
    // "none" (the loop simply waits again).
    if (timeout_ms < 0)
        timeout_ms = 3600 * 1000;
    __kernel_timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000LL};
    io_uring_getevents_arg arg{};
    arg.pad = kGatherUs; // min_wait_usec
    arg.ts = reinterpret_cast<uint64_t>(&ts);
    int rc = io_uring_enter2(ring_.ring_fd, to_submit, kGather, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
                             reinterpret_cast<sigset_t *>(&arg), sizeof arg);
    return rc < 0 ? -errno : rc;
}

void UringPort::wait(int timeout_ms) {
    if (!deferred_.empty()) {
        // What unlisten reaped and kept: reported first, and no blocking wait
        // before it is.
        std::vector<Cqe> old;
        old.swap(deferred_);
        for (const Cqe &c : old)
            handle(c);
        old.clear();
        if (deferred_.empty())
            deferred_.swap(old); // keep the capacity
        timeout_ms = 0;
    }
    if (uring_hooks().end_accept.load(std::memory_order_relaxed) && uring_hooks().end_accept.exchange(false) &&
        accept_armed_)
        cancel(kAccept); // not accept_cancel_: to the port it looks like the kernel's own end
    int rc;
    bool need_enter = timeout_ms != 0 || io_uring_sq_ready(&ring_) > 0 ||
                      tier_ == WEIR_URING_TIER_DEFER || (*ring_.sq.kflags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW));
    rc = need_enter ? submit(timeout_ms == 0 ? 0 : 1, timeout_ms) : 0;
    pass_recvs_ = 0; // what this pass reaps decides how the next one waits
    // EMFILE/ENFILE: an accept run inside the enter met the limit; its CQE
    // reports it (the door's retry), and the enter is made again next pass.
    if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EMFILE && rc != -ENFILE) {
        char msg[96];
        std::snprintf(msg, sizeof msg, "io_uring_enter failed: %s", strerrorname_np(-rc));
        w_->log_once(LOG_BACKEND, msg);
    }
    reap(false);
    count_overflow();
    bufs_.publish();
    rearm_nobufs();
}

void UringPort::count_overflow() {
    // Dropped completions (none with NODROP) and passes that found CQEs
    // waiting in the kernel's overflow list.
    unsigned dropped = *ring_.cq.koverflow;
    if (dropped != overflow_seen_) {
        w_->metrics.add(M_URING_CQ_OVERFLOWS, dropped - overflow_seen_);
        overflow_seen_ = dropped;
    }
    if (*ring_.sq.kflags & IORING_SQ_CQ_OVERFLOW)
        w_->metrics.add(M_URING_CQ_OVERFLOWS);
}

// Every completion is copied and the CQ advanced before it is handled: a
// handler may queue (and submit) more, and the CQ slot is free at once.
void UringPort::reap(bool accept_only) {
    io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe) {
        Cqe c{cqe->user_data, cqe->res, cqe->flags};
        io_uring_cqe_seen(&ring_, cqe);
        if (!accept_only || (c.ud & kKindMask) == kAccept) {
            handle(c);
            continue;
        }
        try {
            deferred_.push_back(c);
        } catch (...) {
            handle(c); // no memory to keep it: report it now
        }
    }
}

void UringPort::handle(const Cqe &c) {
    uint64_t kind = c.ud & kKindMask;
    Slot *s = reinterpret_cast<Slot *>(c.ud & ~kKindMask);
    switch (kind) {
    case kRecv:
        pass_recvs_++;
        on_recv(*s, c);
        break;
    case kSend:
        on_send(*s, c);
        break;
    case kSpliceIn:
    case kSpliceOut:
    case kPollOut:
        on_splice(*s, c, kind);
        break;
    case kAccept:
        on_accept(c);
        break;
    case kWake:
        wake_armed_ = false;
        w_->woken();
        arm_wake();
        break;
    default: // a cancel that found nothing, a close that failed: nothing names a slot
        break;
    }
}

// ---------------------------------------------------------------- submitting

// Cancels what target names; the cancel's own CQE (only when it found
// nothing, with CQE_SKIP) names no slot.
void UringPort::cancel(uint64_t target) {
    io_uring_sqe *q = sqe();
    if (!q)
        return;
    io_uring_prep_cancel64(q, target, 0);
    io_uring_sqe_set_data64(q, kIgnore);
    if (used_ & WEIR_URING_F_CQE_SKIP)
        q->flags |= IOSQE_CQE_SKIP_SUCCESS;
}

// What the multishot accept took first; with it not armed (ended by the
// kernel, resting, or unlistened), straight from the listener, and armed
// again while the listener is ours. The peer's address is the worker's to
// ask for (Worker::admit): one multishot accept has no address per CQE.
void UringPort::submit_queued() {
    if (ring_thread() && enabled_ && io_uring_sq_ready(&ring_) > 0) {
        w_->metrics.add(M_URING_ENTERS);
        io_uring_submit(&ring_);
    }
}

// The loop stops: the closes and cancels it queued go in, and their
// completions are run here (with DEFER_TASKRUN only this thread can run
// them), so each socket is released now (the client sees its FIN) and not
// when the engine is destroyed. Bounded: 1 s.
void UringPort::push() {
    if (!ring_thread() || !enabled_)
        return;
    int64_t until = mono_ms() + 1000;
    submit_queued();
    while (inflight_ > 0 && mono_ms() < until) {
        submit(1, 10);
        reap(false);
    }
}

// ---------------------------------------------------------------- wake

void UringPort::arm_wake() {
    if (wake_armed_)
        return;
    io_uring_sqe *q = sqe();
    if (!q)
        return;
    io_uring_prep_read(q, wake_fd_, &wake_val_, sizeof wake_val_, 0);
    io_uring_sqe_set_data64(q, kWake);
    wake_armed_ = true;
}

void UringPort::wake() {
    uint64_t one = 1;
    ssize_t rc = ::write(wake_fd_, &one, sizeof one);
    (void)rc; // EAGAIN: the counter is full, so a wake is pending anyway
}

} // namespace weir
