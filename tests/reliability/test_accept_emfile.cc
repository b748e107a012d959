// Accepting out of descriptors: with RLIMIT_NOFILE lowered so accept4 fails
// with EMFILE, the loop neither spins (loop_passes grows by the retry
// interval, not by the CPU) nor counts the door as owed; every failure is
// counted in accept_resource_errors and logged once; once descriptors free up
// the edge-triggered listener is retried on the timer and accepting resumes.
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "loop/engine.h"
#include "uring/uring_port.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

std::atomic<int> g_logs{0};
void log_fn(void *, int, const char *msg) {
    g_logs++;
    print_message("log: %s\n", msg);
}
void handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

// A new descriptor takes the lowest free number and must stay below the soft
// limit: a limit equal to the lowest free number leaves no descriptor to make.
int lowest_free_fd() {
    int fd = ::dup(0);
    ::close(fd);
    return fd;
}

void test_accept_emfile_no_spin_then_resume(void **) {
    Server s;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.log = log_fn;
    assert_int_equal(s.start(c), 0);
    // make sure the loop is idle and settled
    {
        Client warm = connect_to(s.port);
        assert_true(send_all(warm, get("/")));
        assert_int_equal(read_response(warm).status, 200);
    }
    // the server closes its side of that connection before the fd count
    int64_t until = now_ms() + 3000;
    while (s.metrics().connections_open != 0 && now_ms() < until)
        sleep_ms(2);
    assert_int_equal(s.metrics().connections_open, 0);
    // client sockets are made before the limit drops; connect needs no new fd
    constexpr int kClients = 4;
    std::vector<int> socks;
    for (int i = 0; i < kClients; i++)
        socks.push_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    rlimit old;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    rlimit low = old;
    low.rlim_cur = static_cast<rlim_t>(lowest_free_fd());
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    if (test_backend() == WEIR_BACKEND_URING) {
        // io_uring's accept reads RLIMIT_NOFILE when it is armed, so the
        // multishot accept armed at start keeps the old limit: end it (as
        // the kernel ends one), and its re-arm meets the new one.
        weir::uring_hooks().end_accept.store(true);
        reinterpret_cast<weir::Engine *>(s.e)->worker(0)->wake();
        int64_t hook_until = now_ms() + 2000;
        while (weir::uring_hooks().end_accept.load() && now_ms() < hook_until)
            sleep_ms(1);
        sleep_ms(100); // the cancel's CQE, and the re-arm's first EMFILE
    }

    weir_metrics m0 = s.metrics();
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(s.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::vector<Client> clients;
    for (int fd : socks) {
        assert_int_equal(::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        clients.emplace_back(fd);
        assert_true(send_all(clients.back(), get("/")));
    }
    sleep_ms(600);
    weir_metrics m1 = s.metrics();
    // restore before asserting, so a failure does not starve the runner
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);

    print_message("EMFILE: %llu resource errors, %llu passes in 600 ms, owed %llu -> %llu\n",
                  static_cast<unsigned long long>(m1.accept_resource_errors - m0.accept_resource_errors),
                  static_cast<unsigned long long>(m1.loop_passes - m0.loop_passes),
                  static_cast<unsigned long long>(m0.accept_owed), static_cast<unsigned long long>(m1.accept_owed));
    assert_true(m1.accept_resource_errors > m0.accept_resource_errors);
    assert_int_equal(m1.accept_owed, m0.accept_owed);
    assert_int_equal(m1.accepted, m0.accepted);
    // a retry every ~50 ms: about 12 passes; a spinning loop makes thousands
    assert_true(m1.loop_passes - m0.loop_passes <= 40);
    assert_true(m1.loop_passes - m0.loop_passes >= 3); // and it does retry
    assert_int_equal(g_logs.load(), 1);

    // descriptors are back: the retry tick admits the backlog
    int64_t t0 = now_ms();
    for (auto &k : clients) {
        Response r = read_response(k, 3000);
        assert_int_equal(r.status, 200);
    }
    assert_true(now_ms() - t0 < 1000);
    weir_metrics m2 = s.metrics();
    assert_int_equal(m2.accepted, m0.accepted + kClients);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_emfile_no_spin_then_resume),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
