// The host's thread is not disturbed by weir's rings: after the first
// weir_engine_create (and its start) in a process, a blocking call on the
// thread that made it runs to its own end, not cut short by EINTR.
//
// Why it can fail: the io_uring feature probe leaves an operation armed on
// each throwaway ring it tears down; the kernel cancels it through task work
// queued to the thread that submitted it, which interrupts that thread's next
// blocking call some 1-20 ms later. Run on the caller's thread (the mutant:
// uring_caps() calling probe() directly), a 300 ms timed recv right after
// create fails with EINTR in every run measured here; on its own thread the
// recv waits its 300 ms and says EAGAIN. Found by the Rust crate's tests,
// whose raw-upgrade client read failed so about one run in three.
//
// On epoll the same case runs and must pass as well (nothing to disturb).
// Alone in its binary: the probe runs once per process, so this must be the
// process's first engine.
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

void hello(void *, weir_exchange *ex) { answer(ex, 200, "hi"); }

// A recv on an idle socket pair with a 300 ms timeout: returns the errno it
// ended with (EAGAIN when it ran its course) and how long it took.
int timed_recv(long *took_ms) {
    int sv[2];
    assert_int_equal(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    timeval tv{0, 300000};
    assert_int_equal(::setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    char b[4];
    auto t0 = std::chrono::steady_clock::now();
    ssize_t n = ::recv(sv[0], b, sizeof b, 0);
    int err = n < 0 ? errno : 0;
    *took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    ::close(sv[0]);
    ::close(sv[1]);
    return err;
}

void test_create_and_start_leave_the_caller_alone(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, hello, nullptr)), 0);
    long took = 0;
    int err = timed_recv(&took);
    print_message("after create and start on %s: recv ended with %s after %ld ms\n", test_backend_name(),
                  err == EAGAIN ? "EAGAIN" : err == EINTR ? "EINTR" : "another errno", took);
    assert_int_equal(err, EAGAIN);
    Client c = connect_to(s.port); // and the engine serves
    assert_true(send_all(c, get("/")));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), "hi");
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_create_and_start_leave_the_caller_alone),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
