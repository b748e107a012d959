// The port: the narrow seam between the shared loop and a backend
// (DESIGN.md §2, docs/engine.md "The port").
//
// It is shaped around completions, which epoll emulates cheaply and io_uring
// is natively: the worker asks (start a connection, want to read, write,
// accept one, close, release, wait, wake) and the backend does, reporting
// through the worker's port callbacks (worker.h): input landed in a lent
// buffer or in one the backend lends, input ended, output written, a door is
// ready, the wake fired. epoll does its reads, writes and accept4 itself and
// reports at once; io_uring reports from CQEs.
//
// The rule a completion backend lives by: nothing a kernel operation
// references moves or is freed while the operation is in flight. The backend
// counts its operations on a slot (Worker::op_begin / op_end); the worker
// frees a slot only when that count is 0, the connection is closed and no
// exchange is out, and a Conn never moves or frees what it lent (conn.h).
//
// Threading: every call but wake() is made on the worker's owning thread.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "loop/doors.h"

namespace weir {

struct Slot;
class Worker;

// What accept() gives the door's batch.
struct Accepted {
    int fd = -1;
    sockaddr_storage peer{};
    socklen_t peer_len = 0;
    int error = 0; // the errno with Take::Resource and Take::Other
};

// Bytes of every slot that belong to its backend (EPOLLOUT armed, operations
// posted, buffer ids): see port_state() in worker.h.
inline constexpr size_t kPortSlotBytes = 32; // io_uring's UringSlot is 24

class Port {
  public:
    virtual ~Port() = default;
    // Before the loop runs. The port keeps w for its callbacks.
    virtual int init(Worker &w) = 0;

    // Hear about connections arriving on a listener (Worker::door_ready),
    // and stop hearing before the worker closes it. After unlisten, what the
    // backend already took from the listener (a multishot accept's fds)
    // stays for accept(), which then takes from the listener itself until it
    // runs dry: the worker drains (the linger) or drops (shutdown) both.
    virtual int listen(int fd) = 0;
    virtual void unlisten(int fd) = 0;
    // One connection for the door's batch (the worker decides how many a
    // batch takes): Took with out filled, Empty when the door ran dry,
    // Resource (EMFILE, ENFILE, ENOBUFS, ENOMEM) or Other with out.error.
    // out.peer_len 0: the backend has no address (the worker asks for it).
    // drain: the batch takes until the door runs dry (accept_batch 0, the
    // linger's last drain), so Empty must mean the listener's queue is empty
    // too, not only what the backend already took.
    virtual Take accept(int listen_fd, Accepted &out, bool drain) = 0;
    // What the backend queued for the kernel goes now: the loop is about to
    // stop passing (a finished worker), so nothing may wait for a next wait.
    virtual void push() {}

    // A connection starts (accepted, handed over or adopted): hear about its
    // input, and read what is already there.
    virtual int start(Slot &s) = 0;
    // The Conn has room again after Worker::lend_input found none: read when
    // bytes are there (they may be there already).
    virtual void want_read(Slot &s) = 0;
    // The Conn has output: write it all, as the socket takes it, reporting
    // each completion through Worker::written. A write already under way
    // picks the new bytes up; the call is then a no-op. A port that sends
    // files (file_ranges) asks for the file range that follows the bytes
    // once they are all written (Worker::lend_file) and sends it from the
    // file, reporting through Worker::file_written; the range's fd is the
    // Conn's, open until that report, and the socket must stay open (not
    // closed, not reused) while an operation may still resolve either.
    virtual void write(Slot &s) = 0;
    // Whether write() sends file ranges without copying them. A port that
    // does not keeps file answers on the read path (Conn::feed_files: the
    // file is read into the output), which is also where an answer goes
    // whose file the kernel will not send so (file_written's -EINVAL).
    virtual bool file_ranges() const { return false; }
    // The worker is done with the socket: close it, after a FIN and a
    // bounded drain of what already arrived when drain is set (so the peer
    // reads the last answer instead of a reset). Operations still in flight
    // keep the slot alive until they are reported (close may be "not yet").
    virtual void close(Slot &s, bool drain) = 0;
    // Stop hearing about s without closing its fd: it leaves in an image.
    // The same rule for operations in flight.
    virtual void release(Slot &s) = 0;

    // Waits up to timeout_ms (-1: no bound, 0: none) and reports what
    // happened. Never frees a slot.
    virtual void wait(int timeout_ms) = 0;
    // Any thread: makes wait() return (Worker::woken).
    virtual void wake() = 0;
    virtual const char *name() const = 0;
    // The worker's trim found the load quiet (lib/loop/trim.h): give back to
    // the kernel the pages of what the backend keeps for reads and no
    // connection holds now (io_uring's provided buffers); the bytes given.
    // A port that keeps nothing so gives nothing.
    virtual size_t trim_buffers() { return 0; }
};

// The one factory: the port of a backend (WEIR_BACKEND_*). Returns 0 and
// *out, -EINVAL (unknown backend), WEIR_E_UNAVAILABLE (not in this build or
// refused by this kernel), -ENOMEM. Tests pass their own to Engine::create.
// These three are defined by the backends' table (lib/backends/registry.cc):
// the loop names the factory, never a backend.
using PortFactory = int (*)(uint32_t backend, std::unique_ptr<Port> *out);
int make_port(uint32_t backend, std::unique_ptr<Port> *out);
// Why make_port answered WEIR_E_UNAVAILABLE (a static string).
const char *backend_unavailable_reason(uint32_t backend);
// What logs call a backend ("io_uring"); "?" for none.
const char *backend_long_name(uint32_t backend);

} // namespace weir
