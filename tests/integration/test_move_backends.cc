// A connection moves between engines of different backends at its request
// boundary (the worker half of transplant, DESIGN.md §6; the engine-level
// call is issue 11's) without losing or reordering a byte: epoll -> io_uring
// when run with WEIR_TEST_BACKEND=epoll, io_uring -> epoll with uring. This is
// the port's release path on both backends. (On io_uring a recv that still
// delivers after the release hands its bytes to the image through
// Worker::input_late; here the cancel runs before the client's next bytes
// are read, so they stay in the socket and go with the fd: the same
// stream either way. tests/unit/loop/test_worker_port.cc moves a connection
// with bytes arriving mid-move.)
//
// Ten keep-alive clients are served by the source; one asks /move, whose
// handler (on the source's worker thread) detaches every connection to the
// target's worker. The mover's own pipelined /b and /c, sent in the same
// write as /move, are answered in order by whichever side parsed them; every
// other client, idle at
// that moment (its recv armed), then sends /b at once and is answered by the
// target too. A move is not a close: the source counts none.
#include <atomic>
#include <string>
#include <vector>

#include "loop/engine.h"
#include "loop/worker.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

std::atomic<weir::Worker *> g_target{nullptr};

void handler(void *user, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    if (path == "/move") {
        weir::exchange_worker(ex)->detach_all_to(g_target.load());
    }
    answer(ex, 200, std::string(static_cast<const char *>(user)) + " " + path);
}

uint32_t other(uint32_t b) { return b == WEIR_BACKEND_URING ? WEIR_BACKEND_EPOLL : WEIR_BACKEND_URING; }

void test_move_to_the_other_backend(void **) {
    Server src, dst;
    weir_config cs = config(1, WEIR_MODE_INLINE, handler, const_cast<char *>("src"));
    assert_int_equal(src.start(cs), 0);
    weir_config cd = config(1, WEIR_MODE_INLINE, handler, const_cast<char *>("dst"));
    cd.backend = other(cs.backend);
    assert_int_equal(dst.start(cd), 0); // skips where io_uring is unavailable
    g_target = reinterpret_cast<weir::Engine *>(dst.e)->worker(0);

    constexpr int kClients = 10;
    std::vector<Client> cl;
    for (int i = 0; i < kClients; i++) {
        cl.push_back(connect_to(src.port));
        assert_true(send_all(cl[i], get("/a")));
        Response r = read_response(cl[i]);
        assert_string_equal(r.body.c_str(), "src /a");
    }
    assert_true(send_all(cl[0], get("/move") + get("/b") + get("/c")));
    assert_string_equal(read_response(cl[0]).body.c_str(), "src /move");
    // /b and /c came in /move's read: parsed before the hold, they may be
    // the source's; in order, each once, whoever answers.
    std::string b = read_response(cl[0]).body, c = read_response(cl[0]).body;
    assert_true(b == "src /b" || b == "dst /b");
    assert_true(c == "src /c" || c == "dst /c");
    int mover_src = (b[0] == 's') + (c[0] == 's');
    for (int i = 1; i < kClients; i++) // sent while they move
        assert_true(send_all(cl[i], get("/b") + get("/c")));
    for (int i = 1; i < kClients; i++) {
        assert_string_equal(read_response(cl[i]).body.c_str(), "dst /b");
        assert_string_equal(read_response(cl[i]).body.c_str(), "dst /c");
    }
    for (int i = 0; i < kClients; i++) { // and later ones, on the target's own reads
        assert_true(send_all(cl[i], get("/d")));
        assert_string_equal(read_response(cl[i]).body.c_str(), "dst /d");
    }
    weir_metrics ms = src.metrics(), md = dst.metrics();
    uint64_t src_closes = 0;
    for (uint64_t n : ms.closes)
        src_closes += n;
    assert_int_equal(src_closes, 0); // a move is not a close
    assert_int_equal(ms.connections_open, 0);
    assert_int_equal(md.connections_open, kClients);
    assert_int_equal(md.accepted, 0);
    // Each side counted the requests it parsed: 10 /a and /move at the source.
    assert_int_equal(ms.requests, kClients + 1 + mover_src);
    assert_int_equal(md.requests, 2 - mover_src + 2 * (kClients - 1) + kClients);
    g_target = nullptr;
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_move_to_the_other_backend),
    };
    return cmocka_run_group_tests_name("move_backends", tests, nullptr, nullptr);
}
