// Driven mode: the host's thread runs the worker with weir_worker_poll; one
// poll returns a batch; answers given since the last poll leave on the next
// one; foreign-thread answers wake the poll, and so does weir_worker_wake;
// shutdown ends the polls.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/hooks.h"
#include "support/net.h"

using namespace testnet;

namespace {

struct Driven {
    Server srv;
    weir_worker *w = nullptr;
    int start(uint32_t workers = 1) {
        weir_config c = config(workers, WEIR_MODE_DRIVEN, nullptr, nullptr);
        int rc = srv.start(c);
        if (rc < 0)
            return rc;
        return weir_engine_worker(srv.e, 0, &w);
    }
};

// Polls until at least want exchanges arrived (or 3 s).
std::vector<weir_exchange *> poll_for(weir_worker *w, size_t want, int *max_batch = nullptr) {
    std::vector<weir_exchange *> got;
    weir_exchange *out[64];
    int64_t until = now_ms() + 3000;
    while (got.size() < want && now_ms() < until) {
        int n = weir_worker_poll(w, out, 64, 50);
        if (n < 0)
            break;
        if (max_batch && n > *max_batch)
            *max_batch = n;
        got.insert(got.end(), out, out + n);
    }
    return got;
}

void test_driven_answers_flushed_on_next_poll(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/one")));
    auto got = poll_for(d.w, 1);
    assert_int_equal(got.size(), 1);
    assert_string_equal(str(weir_exchange_request(got[0])->path).c_str(), "/one");
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    assert_int_equal(weir_exchange_peer(got[0], &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(answer(got[0], 200, "first"), 0);
    // same thread, between polls: held until the next poll
    assert_true(stays_silent(c, 100));
    weir_exchange *none[4];
    assert_int_equal(weir_worker_poll(d.w, none, 4, 0), 0);
    Response r = read_response(c, 2000);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), "first");
}

void test_driven_pipelined_batch(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    std::string all;
    for (int i = 0; i < 10; i++)
        all += get("/b" + std::to_string(i));
    assert_true(send_all(c, all));
    int max_batch = 0;
    auto got = poll_for(d.w, 10, &max_batch);
    assert_int_equal(got.size(), 10);
    assert_true(max_batch >= 2); // one poll carried several requests
    for (size_t i = 0; i < got.size(); i++)
        assert_int_equal(answer(got[i], 200, str(weir_exchange_request(got[i])->path)), 0);
    weir_exchange *none[4];
    weir_worker_poll(d.w, none, 4, 0);
    for (int i = 0; i < 10; i++) {
        Response r = read_response(c, 2000);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str(), ("/b" + std::to_string(i)).c_str());
    }
    weir_metrics m = d.srv.metrics();
    assert_int_equal(m.requests, 10);
}

void test_driven_small_max_keeps_the_rest(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/a") + get("/b") + get("/c")));
    std::vector<weir_exchange *> got;
    weir_exchange *out[1];
    int64_t until = now_ms() + 3000;
    while (got.size() < 3 && now_ms() < until) {
        int n = weir_worker_poll(d.w, out, 1, 50);
        assert_true(n >= 0 && n <= 1);
        got.insert(got.end(), out, out + n);
    }
    assert_int_equal(got.size(), 3);
    assert_string_equal(str(weir_exchange_request(got[2])->path).c_str(), "/c");
    for (auto *x : got)
        answer(x, 204, "");
    weir_worker_poll(d.w, out, 1, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(read_response(c, 2000).status, 204);
}

void test_driven_foreign_answer_wakes_poll(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/f")));
    auto got = poll_for(d.w, 1);
    assert_int_equal(got.size(), 1);
    std::atomic<bool> stop{false};
    // the host blocks in poll (no timeout bound); an answer from another
    // thread must reach the wire without another request arriving
    std::thread host([&] {
        weir_exchange *out[4];
        while (!stop.load()) {
            int n = weir_worker_poll(d.w, out, 4, 100);
            if (n < 0)
                break;
        }
    });
    sleep_ms(50);
    std::thread other([&] { assert_int_equal(answer(got[0], 200, "from afar"), 0); });
    other.join();
    Response r = read_response(c, 2000);
    stop = true;
    host.join();
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), "from afar");
}

// weir_worker_wake returns a poll that has nothing ready, from another
// thread, and one given before a poll returns the next one; it counts once.
// The control is a poll left to its timeout in the same run; a loop that
// ignores the wake sits out the 5 s bound instead (the arm that shows it).
void test_driven_wake_returns_poll(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    assert_int_equal(weir_worker_wake(nullptr), -EINVAL);
    weir_exchange *out[4];
    int64_t t0 = now_ms();
    assert_int_equal(weir_worker_poll(d.w, out, 4, 300), 0);
    int64_t control = now_ms() - t0; // nothing wakes it: the whole timeout
    assert_true(control >= 250);

    std::atomic<int64_t> woke_at{0};
    int64_t returned_at = 0;
    std::thread host([&] {
        int n = weir_worker_poll(d.w, out, 4, 5000);
        returned_at = now_ms();
        assert_int_equal(n, 0);
    });
    sleep_ms(50);
    woke_at = now_ms();
    assert_int_equal(weir_worker_wake(d.w), 0);
    host.join();
    int64_t lag = returned_at - woke_at.load();

    // Before the poll: kept for it, and counted once however many were given.
    assert_int_equal(weir_worker_wake(d.w), 0);
    assert_int_equal(weir_worker_wake(d.w), 0);
    t0 = now_ms();
    assert_int_equal(weir_worker_poll(d.w, out, 4, 5000), 0);
    int64_t early = now_ms() - t0;
    t0 = now_ms();
    assert_int_equal(weir_worker_poll(d.w, out, 4, 300), 0);
    int64_t after = now_ms() - t0;
    print_message("wake: control poll %lld ms; a woken poll returned %lld ms after the wake; one woken "
                  "beforehand took %lld ms; the poll after it %lld ms\n",
                  (long long)control, (long long)lag, (long long)early, (long long)after);
    assert_true(lag * 4 < control);
    assert_true(early * 4 < control);
    assert_true(after * 4 >= control * 3); // the wakes were used up by one poll
}

uint64_t posted() { return weir::loop_hooks().posted_answers.load(); }

// weir_worker_own: the thread that polled last gives its answers at once
// (the control arm: nothing posted) until it gives its turn up (own 0: its
// next answer is posted, the rule Go's unlocked async worker relies on so a
// handler on that thread never touches the worker beside another thread's
// poll); own 1 makes another thread the worker's. A mutant whose own() does
// nothing fails the posted counts. Every answer arrives, in order.
void test_driven_own_turn(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/a") + get("/b") + get("/c")));
    auto got = poll_for(d.w, 3);
    assert_int_equal(got.size(), 3);
    uint64_t p0 = posted();
    assert_int_equal(answer(got[0], 200, "a"), 0);
    assert_int_equal(posted(), p0); // control: the poller's own answer, given at once
    assert_int_equal(weir_worker_own(d.w, 0), 0);
    assert_int_equal(answer(got[1], 200, "b"), 0);
    assert_int_equal(posted(), p0 + 1); // the rule: no thread is the worker's now
    assert_int_equal(weir_worker_own(d.w, 0), 0); // given up twice: still no one's
    std::thread other([&] {
        assert_int_equal(weir_worker_own(d.w, 1), 0);
        assert_int_equal(answer(got[2], 200, "c"), 0);
    });
    other.join();
    assert_int_equal(posted(), p0 + 1); // that thread was the worker's: given at once
    weir_exchange *none[4];
    // Two passes: a posted answer is taken after a pass's wait, and on
    // io_uring its send goes in with the next enter.
    assert_int_equal(weir_worker_poll(d.w, none, 4, 0), 0);
    assert_int_equal(weir_worker_poll(d.w, none, 4, 20), 0);
    for (const char *want : {"a", "b", "c"}) {
        Response r = read_response(c, 2000);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str(), want);
    }
    assert_int_equal(weir_worker_own(nullptr, 1), -EINVAL);
}

void test_driven_shutdown_ends_polls(void **) {
    Driven d;
    assert_int_equal(d.start(2), 0);
    weir_worker *w1 = nullptr;
    assert_int_equal(weir_engine_worker(d.srv.e, 1, &w1), 0);
    assert_int_equal(weir_engine_worker(d.srv.e, 2, &w1), -EINVAL);
    assert_int_equal(weir_engine_worker(d.srv.e, 1, &w1), 0);
    std::atomic<int> ended{0};
    std::vector<std::thread> hosts;
    for (weir_worker *w : {d.w, w1})
        hosts.emplace_back([w, &ended] {
            weir_exchange *out[8];
            for (;;) {
                int n = weir_worker_poll(w, out, 8, 1000);
                for (int i = 0; i < n; i++)
                    answer(out[i], 200, "ok");
                if (n == WEIR_E_SHUTDOWN) {
                    ended++;
                    return;
                }
            }
        });
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/")));
    assert_int_equal(read_response(c, 2000).status, 200);
    assert_int_equal(d.srv.shutdown(1'000'000'000LL), 0);
    for (auto &t : hosts)
        t.join();
    assert_int_equal(ended.load(), 2);
    assert_true(wait_closed(c, 1000));
    weir_exchange *out[1];
    assert_int_equal(weir_worker_poll(d.w, out, 1, 0), WEIR_E_SHUTDOWN);
    assert_int_equal(d.srv.metrics().closes[WEIR_CLOSE_SHUTDOWN], 1);
}

void test_driven_pipeline_backpressure_resumes(void **) {
    // max_pipeline 2: the worker stops reading after two unanswered requests
    // and, with edge-triggered readiness, must resume by itself once they are
    // answered (no new bytes will arrive to signal it).
    Server s;
    weir_config c = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
    c.max_pipeline = 2;
    assert_int_equal(s.start(c), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    Client k = connect_to(s.port);
    std::string all;
    for (int i = 0; i < 12; i++)
        all += get("/q" + std::to_string(i));
    assert_true(send_all(k, all));
    int seen = 0;
    int64_t until = now_ms() + 3000;
    weir_exchange *out[64];
    while (seen < 12 && now_ms() < until) {
        int n = weir_worker_poll(w, out, 64, 50);
        assert_true(n >= 0 && n <= 2);
        for (int i = 0; i < n; i++) {
            assert_string_equal(str(weir_exchange_request(out[i])->path).c_str(),
                                ("/q" + std::to_string(seen)).c_str());
            answer(out[i], 200, std::to_string(seen));
            seen++;
        }
    }
    assert_int_equal(seen, 12);
    weir_worker_poll(w, out, 64, 0);
    for (int i = 0; i < 12; i++) {
        Response r = read_response(k, 2000);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str(), std::to_string(i).c_str());
    }
}

void test_driven_poll_takes_owed_accepts(void **) {
    // accept_batch 2 and ten connections waiting: one poll runs the owed
    // batches before returning, so it hands out all ten requests at once
    // (without the owed passes it would return after the first batch: two).
    Server s;
    weir_config c = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
    c.accept_batch = 2;
    assert_int_equal(s.start(c), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    std::vector<Client> clients;
    for (int i = 0; i < 10; i++) {
        clients.push_back(connect_to(s.port));
        assert_true(send_all(clients.back(), get("/o")));
    }
    sleep_ms(50);
    weir_exchange *out[64];
    int n = weir_worker_poll(w, out, 64, 1000);
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++)
        answer(out[i], 200, "ok");
    weir_worker_poll(w, out, 64, 0);
    for (auto &k : clients)
        assert_int_equal(read_response(k, 2000).status, 200);
    weir_metrics m = s.metrics();
    assert_true(m.accept_owed >= 4);
}

void test_driven_destroy_without_polls(void **) {
    // a host that stopped polling early: destroy still closes and frees all
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/never")));
    auto got = poll_for(d.w, 1);
    assert_int_equal(got.size(), 1);
    weir_engine_destroy(d.srv.e);
    d.srv.e = nullptr;
    assert_true(wait_closed(c, 1000));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driven_answers_flushed_on_next_poll),
        cmocka_unit_test(test_driven_pipelined_batch),
        cmocka_unit_test(test_driven_small_max_keeps_the_rest),
        cmocka_unit_test(test_driven_foreign_answer_wakes_poll),
        cmocka_unit_test(test_driven_wake_returns_poll),
        cmocka_unit_test(test_driven_own_turn),
        cmocka_unit_test(test_driven_shutdown_ends_polls),
        cmocka_unit_test(test_driven_pipeline_backpressure_resumes),
        cmocka_unit_test(test_driven_poll_takes_owed_accepts),
        cmocka_unit_test(test_driven_destroy_without_polls),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
