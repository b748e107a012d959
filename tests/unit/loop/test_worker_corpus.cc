// Replays every seed in fuzz/corpus/worker through the worker fuzzer's own
// oracle (fuzz/oracle/worker.h), so a regression fails without clang; then
// the oracle's negative arms, each showing that a check can fail:
//   - the wire check refuses a client stream whose status, body or count is
//     not the host's (a tampered copy of a real run's bytes);
//   - the clock ticks are real: the header_timeout seed's slow client is
//     closed as a header timeout with its tick, and stays open without it.
#include "../../../fuzz/oracle/worker.h"

#include "support/corpus.h"

using namespace worker_fuzz;

static void test_worker_corpus_replay(void **) { testcorpus::replay("worker", worker_fuzz::one, 30); }

// A positive run of the wire check and three tampered copies.
static void test_worker_wire_negative_arms(void **) {
    Client c;
    std::vector<Held> held(2);
    held[0].index = 0;
    held[1].index = 1;
    std::vector<Expect> ex(2);
    ex[0].kind = ex[1].kind = Expect::Whole;
    ex[0].status = 200;
    ex[0].body = "#0.0";
    ex[1].status = 404;
    ex[1].body = "#0.1";
    ex[0].ended = ex[1].ended = true;
    const std::string a = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n#0.0";
    const std::string b = "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n#0.1\r\n0\r\n\r\n";
    c.out = a + b;
    assert_null(check_wire(c, held, ex, 0)); // the rule holds
    c.out = b + a;                           // answers out of request order
    assert_non_null(check_wire(c, held, ex, 0));
    c.out = a + b.substr(0, b.size() - 3); // cut on a connection still open
    assert_non_null(check_wire(c, held, ex, 0));
    c.ended = true; // the same cut where the connection ended: allowed
    assert_null(check_wire(c, held, ex, 0));
    c.ended = false;
    c.out = a; // the second answer never arrived
    assert_non_null(check_wire(c, held, ex, 0));
    c.out = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n#0.9" + b; // another request's body
    assert_non_null(check_wire(c, held, ex, 0));
}

// One seed with its clock tick and without: the tick must close the slow
// client as a header timeout, and nothing else must.
static uint64_t header_timeouts(bool tick) {
    std::string seed = testcorpus::slurp(std::string(WEIR_SOURCE_DIR) + "/fuzz/corpus/worker/header_timeout_tick");
    size_t at = seed.find(std::string("\x07\x1e", 2)); // the tick op: 30 * 50 ms
    assert_true(at != std::string::npos);
    if (!tick)
        seed[at + 1] = 0; // a tick of 0 ms: the pass runs, the clock does not move
    // Run it, and read the metrics through a run of our own.
    const char *why = one(reinterpret_cast<const uint8_t *>(seed.data()), seed.size());
    assert_null(why);
    return last_metrics().closes[WEIR_CLOSE_HEADER_TIMEOUT];
}

static void test_worker_tick_closes_slow_head(void **) {
    assert_int_equal(header_timeouts(true), 1);
    assert_int_equal(header_timeouts(false), 0); // negative arm: no tick, no timeout
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_corpus_replay),
        cmocka_unit_test(test_worker_wire_negative_arms),
        cmocka_unit_test(test_worker_tick_closes_slow_head),
    };
    return cmocka_run_group_tests_name("worker_corpus", tests, nullptr, nullptr);
}
