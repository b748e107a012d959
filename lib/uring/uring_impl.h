// The io_uring port's insides, shared by uring_port.cc (the ring, the wait,
// accept, wake) and uring_conn.cc (a connection's recv, send and close).
//
// Tags: every SQE's user_data is a slot address (8-aligned) or 0, with the
// operation's kind in the low 3 bits. A slot is freed only when the last
// CQE naming it arrived (Worker::op_begin / op_end): its multishot recv and
// its send each count one operation while armed or in flight.
#pragma once

#include <liburing.h>
#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "loop/port.h"
#include "loop/worker.h"
#include "uring/buf_ring.h"

namespace weir {

enum UringKind : uint64_t {
    kRecv = 0,
    kSend = 1,
    kIgnore = 2,
    kAccept = 3,
    kWake = 4,
    kSpliceIn = 5,  // a file range into the connection's pipe (uring_splice.cc)
    kSpliceOut = 6, // the pipe's bytes into the socket
    kPollOut = 7,   // the socket took none of them: wait until it has room
};
inline constexpr uint64_t kKindMask = 7;
inline constexpr size_t kMaxIov = 64;

// sendmsg's header and iovecs, alive while the send is in flight.
struct SendCtx {
    msghdr msg;
    iovec iov[kMaxIov];
    SendCtx *next;
};

// A pipe a file range passes through (file -> pipe -> socket, two linked
// splices). Taken from the port's pool for a pair and given back when it is
// empty and nothing names it, so only connections with a splice under way
// hold one (2 fds).
struct SplicePipe {
    int r = -1, w = -1;
    uint32_t cap = 0;     // its size (1 MiB when the kernel allows: docs/uring.md)
    uint32_t fill = 0;    // bytes taken from the file, not yet in the socket
    uint32_t want = 0;    // the pair's length
    uint8_t pending = 0;  // its operations in flight (splices, the poll)
    bool pair = false;    // the operations in flight are a pair (in, then out)
    int in_res = 0, out_res = 0;
    int close_fd = -1;    // the socket, closed once nothing in flight can resolve it
    SplicePipe *next_free = nullptr;
    SplicePipe *prev = nullptr, *next = nullptr; // every pipe of the port (freed with it)
};

// The port's part of a slot (port_state).
struct UringSlot {
    uint32_t parked;     // provided buffers holding bytes the Conn has not taken yet
    bool recv_armed;     // a multishot recv names the slot
    bool recv_cancel;    // and its cancel is posted
    bool send_busy;      // a send names the slot
    bool nobufs;         // on the re-arm list: the buffer ring ran dry
    bool end_parked;     // the peer's FIN or an error came after the parked bytes
    int end_err;
    SendCtx *ctx;        // the in-flight sendmsg's, if it used one
    SplicePipe *pipe;    // a file range under way (uring_splice.cc)
};

// A completion copied out of the CQ to be handled later (unlisten reaps
// only its accept's; the rest wait for the next wait()).
struct Cqe {
    uint64_t ud;
    int32_t res;
    uint32_t flags;
};

// Bytes the Conn could not take, still in their provided buffer.
struct Parked {
    Slot *s;
    uint16_t bid;
    uint32_t off, len;
};

class UringPort final : public Port {
  public:
    ~UringPort() override;
    int init(Worker &w) override;
    int listen(int fd) override;
    void unlisten(int fd) override;
    Take accept(int listen_fd, Accepted &out, bool drain) override;
    void push() override;
    void submit_queued();
    void begin_op(Slot &s) {
        inflight_++;
        w_->op_begin(s);
    }
    void end_op(Slot &s) {
        inflight_--;
        w_->op_end(s);
    }
    int start(Slot &s) override;
    void want_read(Slot &s) override;
    void write(Slot &s) override;
    void close(Slot &s, bool drain) override;
    void release(Slot &s) override;
    void wait(int timeout_ms) override;
    void wake() override;
    const char *name() const override { return "io_uring"; }
    bool file_ranges() const override { return splice_ok_; }
    size_t trim_buffers() override;

  private:
    // uring_port.cc
    io_uring_sqe *sqe();
    int submit(unsigned wait_nr, int timeout_ms);
    int gather(int timeout_ms);
    void reap(bool accept_only);
    void handle(const Cqe &c);
    void on_accept(const Cqe &c);
    void arm_accept();
    void cancel_accept();
    bool accept_unsubmitted() const;
    void arm_wake();
    bool ring_thread() const;
    void count_overflow();
    void cancel(uint64_t target);
    // uring_conn.cc
    void arm_recv(Slot &s);
    void on_recv(Slot &s, const Cqe &c);
    void on_send(Slot &s, const Cqe &c);
    void deliver(Slot &s, uint16_t bid, uint32_t off, uint32_t len);
    void end(Slot &s, int err);
    void drop_parked(Slot &s);
    bool unpark(Slot &s);
    void rearm_nobufs();
    void eager_read(Slot &s);
    // uring_splice.cc
    void splice_range(Slot &s, const FileRange &r);
    void on_splice(Slot &s, const Cqe &c, uint64_t kind);
    bool splice_close(Slot &s, bool closing);
    SplicePipe *take_pipe();
    void give_pipe(SplicePipe *p);
    void free_pipes();
    bool splice_ok_ = false; // IORING_OP_SPLICE on this kernel (probed at init)

    Worker *w_ = nullptr;
    io_uring ring_{};
    bool ring_up_ = false;
    bool enabled_ = false; // R_DISABLED rings are enabled by the first wait, on the loop's thread
    uintptr_t ring_token_ = 0;
    uint32_t tier_ = 0;
    uint32_t recvs_armed_ = 0; // multishot recvs in flight: buffers the kernel may fill
    uint64_t used_ = 0;
    unsigned pass_recvs_ = 0; // recv completions the last pass reaped (the gather's cue)
    bool gather_always_ = false; // WEIR_URING_GATHER=always: every wait gathers (measurement)
    BufRing bufs_;
    int wake_fd_ = -1;
    uint64_t wake_val_ = 0;
    bool wake_armed_ = false;

    int listen_fd_ = -1;
    bool accept_armed_ = false;
    bool accept_cancel_ = false;
    io_uring_sqe *accept_sqe_ = nullptr; // the last multishot accept's SQE, and its index in the SQ
    unsigned accept_sq_index_ = 0;
    std::deque<Accepted> accepted_; // taken by the multishot accept, not yet given to the door

    std::vector<Cqe> deferred_;
    std::vector<Parked> parked_;
    std::vector<Slot *> nobufs_;
    SendCtx *free_ctx_ = nullptr;
    SplicePipe *free_pipes_ = nullptr; // empty pipes kept for the next file range
    uint32_t pipes_kept_ = 0;
    SplicePipe *all_pipes_ = nullptr;
    unsigned overflow_seen_ = 0;
    uint64_t inflight_ = 0; // recvs armed and sends in flight, every slot
};

} // namespace weir
