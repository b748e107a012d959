// Exchange handles that cannot alias (loop/tickets.h, docs/api.md §4) and
// the one failure rule of weir_respond, on every path a handle travels:
// inline, deferred to another thread, driven (the polling thread and
// another), and a thread the handler gave it to without weir_defer.
//
// The rule's arm: with tickets_raw_pointers() on, a handle is the exchange's
// address, as before tickets. A connection that went idle takes its pooled
// state back for the next request, so /b's exchange lives where /a's did and
// the stale answer to /a reaches the client as the answer to /b. Each arm
// asserts that loss, so an arm that stopped showing it fails too.
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loop/tickets.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

constexpr uint32_t kMaxOutput = 64 * 1024;

std::mutex g_mu;
weir_exchange *g_kept = nullptr;            // /a's handle, kept past its answer
std::vector<weir_exchange *> g_parked;      // deferred handles
std::vector<int> g_rcs;                     // what the handler's calls returned

void record(int rc) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_rcs.push_back(rc);
}

std::vector<int> rcs() {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_rcs;
}

int reset_state(void **) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_kept = nullptr;
    g_parked.clear();
    g_rcs.clear();
    weir::tickets_raw_pointers() = false;
    return 0;
}

// The failure rule, as any thread sees it: what leaves the exchange as it
// was (-EINVAL, -EMSGSIZE) can be followed by a good answer; the answer
// consumes it; anything after that is WEIR_E_STALE.
void failure_rule(weir_exchange *ex, const std::string &body) {
    record(weir_respond(ex, 99, nullptr, 0, nullptr, 0, 0));              // -EINVAL
    record(weir_respond(ex, 200, nullptr, 0, "x", 1, 0x80));              // -EINVAL: unknown flag
    std::string big(kMaxOutput + 1, 'b');
    record(weir_respond(ex, 200, nullptr, 0, big.data(), big.size(), 0)); // -EMSGSIZE
    record(answer(ex, 200, body));                                        // 0
    record(answer(ex, 200, "again"));                                     // WEIR_E_STALE
    record(weir_defer(ex));                                               // stale too
}

void expect_failure_rule(const std::vector<int> &got, size_t at) {
    assert_true(got.size() >= at + 6);
    assert_int_equal(got[at], -EINVAL);
    assert_int_equal(got[at + 1], -EINVAL);
    assert_int_equal(got[at + 2], -EMSGSIZE);
    assert_int_equal(got[at + 3], 0);
    assert_int_equal(got[at + 4], WEIR_E_STALE);
    assert_int_equal(got[at + 5], WEIR_E_STALE);
}

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    if (path == "/a") {
        record(answer(ex, 200, "A"));
        std::lock_guard<std::mutex> lk(g_mu);
        g_kept = ex;
    } else if (path == "/b") {
        weir_exchange *old;
        {
            std::lock_guard<std::mutex> lk(g_mu);
            old = g_kept;
        }
        record(answer(old, 200, "STALE")); // the answer to /a, again
        record(answer(ex, 200, "B"));
    } else if (path == "/twice") {
        record(answer(ex, 200, "once"));
        record(answer(ex, 200, "twice"));
        record(weir_exchange_request(ex) == nullptr ? 1 : 0);
    } else if (path == "/rule") {
        failure_rule(ex, "inline");
    } else if (path == "/defer") {
        record(weir_defer(ex));
        std::lock_guard<std::mutex> lk(g_mu);
        g_parked.push_back(ex);
    } else if (path == "/give") {
        // Handed to another thread without weir_defer: refused there, and
        // stale once the handler returned (weir answered 500 for it).
        int rc = 0;
        std::thread t([&] { rc = answer(ex, 200, "from elsewhere"); });
        t.join();
        record(rc);
        std::lock_guard<std::mutex> lk(g_mu);
        g_kept = ex;
    } else {
        answer(ex, 404, "");
    }
}

weir_config inline_cfg() {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.max_output_bytes = kMaxOutput;
    return c;
}

// /a, read its answer (the connection goes idle: its state goes back to the
// pool), then /b. Returns /b's answer.
Response a_then_b(Server &s) {
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/a")));
    Response a = read_response(c);
    assert_string_equal(a.body.c_str(), "A");
    sleep_ms(20); // the idle state is given back at the next read's EAGAIN
    assert_true(send_all(c, get("/b")));
    Response b = read_response(c);
    return b;
}

// The rule: the stale answer is refused and /b gets its own.
void test_inline_stale_refused(void **) {
    Server s;
    assert_int_equal(s.start(inline_cfg()), 0);
    Response b = a_then_b(s);
    assert_int_equal(b.status, 200);
    assert_string_equal(b.body.c_str(), "B");
    auto got = rcs();
    assert_int_equal(got.size(), 3);
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], WEIR_E_STALE);
    assert_int_equal(got[2], 0);
}

// The arm: handles as addresses deliver /a's stale answer to /b.
void test_inline_stale_misdelivered_without_tickets(void **) {
    weir::tickets_raw_pointers() = true;
    Server s;
    assert_int_equal(s.start(inline_cfg()), 0);
    Response b = a_then_b(s);
    weir::tickets_raw_pointers() = false;
    assert_string_equal(b.body.c_str(), "STALE"); // the loss
    auto got = rcs();
    assert_int_equal(got.size(), 3);
    assert_int_equal(got[1], 0);      // the stale answer was taken
    assert_int_not_equal(got[2], 0);  // and the real one refused
}

void test_inline_second_answer_stale(void **) {
    Server s;
    assert_int_equal(s.start(inline_cfg()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/twice") + get("/twice")));
    assert_string_equal(read_response(c).body.c_str(), "once");
    assert_string_equal(read_response(c).body.c_str(), "once");
    auto got = rcs();
    assert_int_equal(got.size(), 6);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(got[i * 3], 0);
        assert_int_equal(got[i * 3 + 1], WEIR_E_STALE);
        assert_int_equal(got[i * 3 + 2], 1); // weir_exchange_request: NULL once answered
    }
}

void test_inline_failure_rule(void **) {
    Server s;
    assert_int_equal(s.start(inline_cfg()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/rule")));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), "inline");
    expect_failure_rule(rcs(), 0);
}

size_t parked() {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_parked.size();
}

bool wait_parked(size_t n) {
    int64_t until = now_ms() + 3000;
    while (parked() < n && now_ms() < until)
        sleep_ms(1);
    return parked() >= n;
}

// Deferred, answered from another thread: the failure rule there, then a
// second request on the same connection whose handle is not the first's.
void test_deferred_failure_rule_and_stale(void **) {
    Server s;
    assert_int_equal(s.start(inline_cfg()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    assert_true(wait_parked(1));
    weir_exchange *first = g_parked[0];
    std::thread([&] { failure_rule(first, "deferred"); }).join();
    Response r = read_response(c);
    assert_string_equal(r.body.c_str(), "deferred");
    sleep_ms(20);
    assert_true(send_all(c, get("/defer")));
    assert_true(wait_parked(2));
    weir_exchange *second = g_parked[1];
    assert_true(second != first);
    int stale = 0, ok = -1;
    std::thread([&] {
        stale = answer(first, 200, "STALE");
        ok = answer(second, 200, "second");
    }).join();
    assert_int_equal(stale, WEIR_E_STALE);
    assert_int_equal(ok, 0);
    assert_string_equal(read_response(c).body.c_str(), "second");
    auto got = rcs();
    assert_int_equal(got[0], 0); // weir_defer
    expect_failure_rule(got, 1);
}

void test_given_away_without_defer(void **) {
    Server s;
    assert_int_equal(s.start(inline_cfg()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/give")));
    assert_int_equal(read_response(c).status, 500); // the handler neither answered nor deferred
    auto got = rcs();
    assert_int_equal(got.size(), 1);
    assert_int_equal(got[0], WEIR_E_STATE); // refused on the other thread: not deferred
    assert_int_equal(answer(g_kept, 200, "late"), WEIR_E_STALE);
}

// ---------------------------------------------------------------- driven

struct Driven {
    Server srv;
    weir_worker *w = nullptr;
    int start() {
        weir_config c = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
        c.max_output_bytes = kMaxOutput;
        int rc = srv.start(c);
        return rc < 0 ? rc : weir_engine_worker(srv.e, 0, &w);
    }
    weir_exchange *one() {
        weir_exchange *out[4];
        int64_t until = now_ms() + 3000;
        while (now_ms() < until) {
            int n = weir_worker_poll(w, out, 4, 20);
            if (n == 1)
                return out[0];
            assert_int_equal(n, 0);
        }
        return nullptr;
    }
    Response serve(Client &c) { // polls while the client waits for its answer
        std::atomic<bool> done{false};
        Response r;
        std::thread t([&] {
            r = read_response(c);
            done = true;
        });
        weir_exchange *none[4];
        while (!done)
            assert_true(weir_worker_poll(w, none, 4, 5) >= 0);
        t.join();
        return r;
    }
};

// Driven, on the polling thread and on another: the rule, then /b after /a
// with /a's handle answered again. raw: the arm (handles as addresses).
void driven_stale(bool raw) {
    weir::tickets_raw_pointers() = raw;
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/a")));
    weir_exchange *a = d.one();
    assert_non_null(a);
    if (!raw) {
        failure_rule(a, "A"); // the polling thread
        expect_failure_rule(rcs(), 0);
    } else {
        assert_int_equal(answer(a, 200, "A"), 0);
    }
    assert_string_equal(d.serve(c).body.c_str(), "A");
    sleep_ms(20);
    weir_exchange *none[4];
    weir_worker_poll(d.w, none, 4, 0); // the idle connection's state goes back
    assert_true(send_all(c, get("/b")));
    weir_exchange *b = d.one();
    assert_non_null(b);
    int stale = 1, ok = 1;
    std::thread([&] { stale = answer(a, 200, "STALE"); }).join(); // another thread
    ok = answer(b, 200, "B");
    Response r = d.serve(c);
    weir::tickets_raw_pointers() = false;
    if (raw) {
        assert_int_equal(stale, 0);
        assert_string_equal(r.body.c_str(), "STALE"); // the loss
        assert_int_not_equal(ok, 0);
    } else {
        assert_int_equal(stale, WEIR_E_STALE);
        assert_int_equal(ok, 0);
        assert_string_equal(r.body.c_str(), "B");
    }
}

void test_driven_stale_refused(void **) { driven_stale(false); }
void test_driven_stale_misdelivered_without_tickets(void **) { driven_stale(true); }

void test_driven_failure_rule_other_thread(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/x")));
    weir_exchange *x = d.one();
    assert_non_null(x);
    std::thread([&] { failure_rule(x, "other thread"); }).join();
    assert_string_equal(d.serve(c).body.c_str(), "other thread");
    expect_failure_rule(rcs(), 0);
}

// Values that were never handles, and NULL.
void test_not_handles(void **) {
    assert_int_equal(weir_respond(nullptr, 200, nullptr, 0, nullptr, 0, 0), -EINVAL);
    auto *fake = reinterpret_cast<weir_exchange *>(uintptr_t{0x7fc0'0012'3456'0001});
    assert_int_equal(weir_respond(fake, 200, nullptr, 0, nullptr, 0, 0), WEIR_E_STALE);
    assert_null(weir_exchange_request(fake));
    assert_int_equal(weir_defer(fake), WEIR_E_STALE);
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    assert_int_equal(weir_exchange_peer(fake, &ss, &len), WEIR_E_STALE);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_inline_stale_refused, reset_state),
        cmocka_unit_test_setup(test_inline_stale_misdelivered_without_tickets, reset_state),
        cmocka_unit_test_setup(test_inline_second_answer_stale, reset_state),
        cmocka_unit_test_setup(test_inline_failure_rule, reset_state),
        cmocka_unit_test_setup(test_deferred_failure_rule_and_stale, reset_state),
        cmocka_unit_test_setup(test_given_away_without_defer, reset_state),
        cmocka_unit_test_setup(test_driven_stale_refused, reset_state),
        cmocka_unit_test_setup(test_driven_stale_misdelivered_without_tickets, reset_state),
        cmocka_unit_test_setup(test_driven_failure_rule_other_thread, reset_state),
        cmocka_unit_test_setup(test_not_handles, reset_state),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
