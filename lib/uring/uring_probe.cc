// The probe: a throwaway ring per question, each feature tried the way the
// port will use it. A kernel that refuses io_uring altogether (ENOSYS, EPERM
// from io_uring_disabled or a seccomp filter) gives `missing`.
#include "uring/uring_probe.h"

#include <liburing.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "weir.h"

namespace weir {

int uring_register(int ring_fd, unsigned op, void *arg, unsigned nr) {
    long rc = ::syscall(__NR_io_uring_register, ring_fd, op, arg, nr);
    return rc < 0 ? -errno : static_cast<int>(rc);
}

namespace {

bool ring_with(unsigned flags, io_uring *r, unsigned *features = nullptr) {
    io_uring_params p;
    std::memset(&p, 0, sizeof p);
    p.flags = flags;
    if (io_uring_queue_init_params(8, r, &p) < 0)
        return false;
    if (features)
        *features = p.features;
    return true;
}

// Submits one prepared SQE and says whether the kernel accepted it: a CQE
// with -EINVAL means it does not know the op or its flags; no CQE yet (the
// op is armed and waiting) or any other result means it does.
bool accepted(io_uring *r) {
    io_uring_submit(r);
    __kernel_timespec ts{0, 20 * 1000 * 1000};
    io_uring_cqe *cqe = nullptr;
    int rc = io_uring_wait_cqe_timeout(r, &cqe, &ts);
    if (rc == -ETIME)
        return true;
    if (rc < 0 || !cqe)
        return false;
    bool ok = cqe->res != -EINVAL;
    io_uring_cqe_seen(r, cqe);
    return ok;
}

int loopback_listener() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0 || ::listen(fd, 4) < 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

bool try_accept(unsigned ioprio) {
    io_uring r;
    if (!ring_with(0, &r))
        return false;
    int lfd = loopback_listener();
    bool ok = false;
    if (lfd >= 0) {
        io_uring_sqe *sqe = io_uring_get_sqe(&r);
        io_uring_prep_multishot_accept(sqe, lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        sqe->ioprio |= static_cast<__u16>(ioprio);
        ok = accepted(&r);
        ::close(lfd);
    }
    io_uring_queue_exit(&r);
    return ok;
}

// A buffer ring of 8 entries registered, and a multishot recv selecting from
// it on a socket pair with nothing to read.
void try_recv(UringCaps &c) {
    io_uring r;
    if (!ring_with(0, &r))
        return;
    size_t sz = 8 * sizeof(io_uring_buf);
    void *mem = ::mmap(nullptr, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int sv[2] = {-1, -1};
    if (mem != MAP_FAILED && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
        io_uring_buf_reg reg;
        std::memset(&reg, 0, sizeof reg);
        reg.ring_addr = reinterpret_cast<uintptr_t>(mem);
        reg.ring_entries = 8;
        reg.bgid = 1;
        if (io_uring_register_buf_ring(&r, &reg, uapi::kPbufRingInc) == 0) {
            c.probed |= WEIR_URING_F_BUF_RING_INC;
            io_uring_unregister_buf_ring(&r, 1);
        }
        if (io_uring_register_buf_ring(&r, &reg, 0) == 0) {
            c.probed |= WEIR_URING_F_BUF_RING;
            io_uring_sqe *sqe = io_uring_get_sqe(&r);
            io_uring_prep_recv_multishot(sqe, sv[0], nullptr, 0, 0);
            sqe->flags |= IOSQE_BUFFER_SELECT;
            sqe->buf_group = 1;
            if (accepted(&r))
                c.probed |= WEIR_URING_F_MULTISHOT_RECV;
        }
    }
    if (sv[0] >= 0) {
        ::close(sv[0]);
        ::close(sv[1]);
    }
    io_uring_queue_exit(&r);
    if (mem != MAP_FAILED)
        ::munmap(mem, sz);
}

UringCaps probe() {
    UringCaps c;
    io_uring r;
    unsigned features = 0;
    io_uring_params p;
    std::memset(&p, 0, sizeof p);
    int rc = io_uring_queue_init_params(8, &r, &p);
    if (rc < 0) {
        c.missing = rc == -ENOSYS ? "io_uring is not in this kernel"
                    : rc == -EPERM ? "io_uring is refused here (kernel.io_uring_disabled or a seccomp filter)"
                                   : "io_uring_setup failed";
        return c;
    }
    features = p.features;
    if (features & IORING_FEAT_EXT_ARG)
        c.probed |= WEIR_URING_F_EXT_ARG;
    if (features & IORING_FEAT_CQE_SKIP)
        c.probed |= WEIR_URING_F_CQE_SKIP;
    if (features & IORING_FEAT_NODROP)
        c.probed |= WEIR_URING_F_NODROP;
    if (features & uapi::kFeatMinTimeout)
        c.probed |= WEIR_URING_F_MIN_TIMEOUT;
    if (features & uapi::kFeatRecvSendBundle)
        c.probed |= WEIR_URING_F_RECV_BUNDLE;
    if (io_uring_register_ring_fd(&r) == 1) {
        c.probed |= WEIR_URING_F_REG_RING_FD;
        io_uring_unregister_ring_fd(&r);
    }
    // NAPI: registering busy-poll settings of zero is harmless, and -EINVAL
    // says the kernel does not know the opcode.
    unsigned char napi[16] = {};
    if (uring_register(r.ring_fd, uapi::kRegisterNapi, napi, 1) == 0) {
        c.probed |= WEIR_URING_F_NAPI;
        uring_register(r.ring_fd, uapi::kUnregisterNapi, napi, 1);
    }
    io_uring_queue_exit(&r);

    if (ring_with(IORING_SETUP_SINGLE_ISSUER, &r)) {
        c.probed |= WEIR_URING_F_SINGLE_ISSUER;
        io_uring_queue_exit(&r);
        if (ring_with(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, &r)) {
            c.probed |= WEIR_URING_F_DEFER_TASKRUN;
            io_uring_queue_exit(&r);
        }
    }
    if (ring_with(IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, &r)) {
        c.probed |= WEIR_URING_F_COOP_TASKRUN;
        io_uring_queue_exit(&r);
    }
    if (try_accept(0))
        c.probed |= WEIR_URING_F_MULTISHOT_ACCEPT;
    if (try_accept(uapi::kAcceptDontWait))
        c.probed |= WEIR_URING_F_ACCEPT_DONTWAIT;
    if (try_accept(uapi::kAcceptPollFirst))
        c.probed |= WEIR_URING_F_ACCEPT_POLL_FIRST;
    try_recv(c);

    // What the port cannot do without (kernels before these have epoll).
    if (!(c.probed & WEIR_URING_F_MULTISHOT_ACCEPT))
        c.missing = "this kernel's io_uring has no multishot accept";
    else if (!(c.probed & WEIR_URING_F_BUF_RING))
        c.missing = "this kernel's io_uring has no provided-buffer rings";
    else if (!(c.probed & WEIR_URING_F_MULTISHOT_RECV))
        c.missing = "this kernel's io_uring has no multishot recv";
    else if (!(c.probed & WEIR_URING_F_NODROP))
        c.missing = "this kernel's io_uring may drop completions (no IORING_FEAT_NODROP)";
    return c;
}

} // namespace

// The probe runs on a thread of its own: a ring torn down with an operation
// still armed (each probe leaves one) cancels it through task work queued to
// the submitting thread, which interrupts that thread's next blocking call
// with EINTR some milliseconds later. The host's thread that created the
// first io_uring engine saw a timed recv fail so (found by the Rust crate's
// tests; tests/integration/test_uring_quiet_caller.cc holds it).
const UringCaps &uring_caps() {
    static const UringCaps caps = [] {
        UringCaps c;
        std::thread([&c] { c = probe(); }).join();
        return c;
    }(); // thread-safe once
    return caps;
}

} // namespace weir
