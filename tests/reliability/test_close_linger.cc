// The lingering close (lib/loop/reaper.h, docs/engine.md): a connection the
// server closes while its client is still sending — Connection: close, or a
// handler's WEIR_RESPOND_CLOSE, with 200 KiB more in the same write — gets
// its FIN, and what the client still sends is read and discarded until the
// client's own FIN, so the whole answer arrives.
// The client makes the answer wait in the server's send queue: an 8 KiB
// receive buffer and slow reads of a 1 MiB answer, so the server's last
// write, and its close, come while much of the answer is still unsent.
//   positive arm: the client reads the whole answer and then a clean EOF;
//     its 200 KiB send completes; close_lingers counts it, no cut.
//   negative arm (LingerHooks::skip_close_linger, the close as it was): the
//     close with unread input draws a reset, which purges the unsent rest of
//     the answer: the client sees ECONNRESET and less than the answer.
//   no linger without more input: a plain Connection: close closes at once
//     (close_lingers 0), the client sees EOF.
//   bound: a client that never stops sending is cut after kLingerBytes
//     (close_linger_cuts), having read its answer first.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/linger.h"
#include "loop/reaper.h"
#include "support/net.h"

using namespace testnet;

namespace {

constexpr size_t kAnswer = 1 << 20;

void handler(void *, weir_exchange *ex) {
    std::string path = str(weir_exchange_request(ex)->path);
    uint32_t flags = path == "/big-close" ? WEIR_RESPOND_CLOSE : 0;
    answer(ex, 200, std::string(path == "/small" ? 100 : kAnswer, 'b'), flags);
}

struct Run {
    Seen seen;
    int send_errno = 0; // 0: the whole write went
    weir_metrics m{};
};

Run run(const std::string &path, const std::string &extra, bool linger) {
    weir::linger_hooks().skip_close_linger.store(!linger);
    Run r;
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    Client c = connect_to(s.port, 8192); // small: the server's window stays small
    assert_true(c.fd >= 0);
    int fd = c.fd;
    std::string bytes = get(path, extra) + std::string(200 * 1024, 'j');
    std::atomic<int> send_errno{-1};
    std::thread sender([&] {
        size_t off = 0;
        while (off < bytes.size()) {
            ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                send_errno = errno;
                return;
            }
            off += static_cast<size_t>(n);
        }
        send_errno = 0;
    });
    r.seen = read_slowly(fd);
    ::shutdown(fd, SHUT_RDWR); // a sender still blocked returns
    sender.join();
    r.send_errno = send_errno.load();
    sleep_ms(50);
    r.m = s.metrics();
    weir::linger_hooks().skip_close_linger.store(false);
    return r;
}

void whole_answer(const std::string &path, const std::string &extra, uint32_t reason) {
    Run r = run(path, extra, true);
    print_message("read %zu of %zu bytes, then %s\n", r.seen.data.size(), r.seen.full(),
                  r.seen.end ? strerror(r.seen.end) : "EOF");
    assert_int_equal(r.seen.end, 0);
    assert_true(r.seen.full() > kAnswer);
    assert_int_equal(r.seen.data.size(), r.seen.full());
    assert_int_equal(r.send_errno, 0); // the reaper read the 200 KiB
    assert_int_equal(r.m.close_lingers, 1);
    assert_int_equal(r.m.close_linger_cuts, 0);
    assert_int_equal(r.m.closes[reason], 1);
}

void test_connection_close_with_more_input_gets_the_whole_answer(void **) {
    whole_answer("/big", "Connection: close\r\n", WEIR_CLOSE_NOT_KEEP_ALIVE);
}

void test_handler_close_with_more_input_gets_the_whole_answer(void **) {
    whole_answer("/big-close", "", WEIR_CLOSE_HANDLER);
}

void test_without_the_linger_the_reset_cuts_the_answer(void **) {
    // The arm that must lose: the close as it was, with unread input.
    Run r = run("/big", "Connection: close\r\n", false);
    print_message("read %zu of %zu bytes, then %s\n", r.seen.data.size(), r.seen.full(),
                  r.seen.end ? strerror(r.seen.end) : "EOF");
    assert_int_equal(r.seen.end, ECONNRESET);
    assert_true(r.seen.data.size() < kAnswer); // the reset purged the unsent rest
    assert_int_equal(r.m.close_lingers, 0);
}

void test_nothing_past_the_request_closes_at_once(void **) {
    // The common Connection: close costs no linger: nothing was sent past
    // the request, so the socket closes as before, and the client sees EOF.
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    for (int i = 0; i < 20; i++) {
        Client c = connect_to(s.port);
        assert_true(send_all(c, get("/small", "Connection: close\r\n")));
        assert_int_equal(read_response(c).status, 200);
        pollfd p{c.fd, POLLIN, 0};
        assert_int_equal(::poll(&p, 1, 2000), 1);
        char b[16];
        assert_int_equal(::recv(c.fd, b, sizeof b, 0), 0);
    }
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_NOT_KEEP_ALIVE], 20);
    assert_int_equal(m.close_lingers, 0);
}

void test_a_client_that_never_stops_is_cut(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    Client c = connect_to(s.port);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> sent{0};
    std::atomic<int> send_errno{0};
    std::string first = get("/small", "Connection: close\r\n") + std::string(16 * 1024, 'j');
    assert_true(send_all(c, first));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    std::thread sender([&] {
        std::string junk(64 * 1024, 'j');
        while (!stop.load()) {
            ssize_t n = ::send(c.fd, junk.data(), junk.size(), MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                send_errno = errno;
                return;
            }
            sent += static_cast<uint64_t>(n);
        }
    });
    int64_t until = now_ms() + 5000;
    while (s.metrics().close_linger_cuts == 0 && now_ms() < until)
        sleep_ms(5);
    sleep_ms(50);
    stop = true;
    sender.join();
    weir_metrics m = s.metrics();
    assert_int_equal(m.close_lingers, 1);
    assert_int_equal(m.close_linger_cuts, 1);
    assert_true(sent.load() >= weir::kLingerBytes);
    assert_true(send_errno.load() == ECONNRESET || send_errno.load() == EPIPE);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connection_close_with_more_input_gets_the_whole_answer),
        cmocka_unit_test(test_handler_close_with_more_input_gets_the_whole_answer),
        cmocka_unit_test(test_without_the_linger_the_reset_cuts_the_answer),
        cmocka_unit_test(test_nothing_past_the_request_closes_at_once),
        cmocka_unit_test(test_a_client_that_never_stops_is_cut),
    };
    return cmocka_run_group_tests_name("close_linger", tests, nullptr, nullptr);
}
