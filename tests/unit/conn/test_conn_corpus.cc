// Replays every seed in fuzz/corpus/conn through the conn fuzzer's own
// split-invariance oracle, so a regression fails without clang.
#include "../../../fuzz/oracle/conn.h"

#include "support/corpus.h"

static void test_conn_corpus_replay(void **) { testcorpus::replay("conn", conn_fuzz::one, 10); }

// The oracle's date mask (found by the conn fuzzer, 2026-12-06: an echoed
// body ending in "\r\nDate: \r\n" made the old mask erase 29 bytes of the
// next answer, its real date left in; two runs a second apart then
// differed). Two outputs whose real dates differ must mask equal, the
// body's lookalike kept; the old mask (29 bytes after every "\r\nDate: ")
// fails the first assertion.
static void test_conn_oracle_masks_only_dates(void **) {
    auto answer = [](const char *date) {
        return std::string("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nx\r\nDate: \r\n") +
               "HTTP/1.1 400 Bad Request\r\nDate: " + date + "\r\nContent-Length: 0\r\n\r\n";
    };
    std::string a = conn_fuzz::mask_dates(answer("Sun, 06 Dec 2026 22:17:43 GMT"));
    std::string b = conn_fuzz::mask_dates(answer("Sun, 06 Dec 2026 22:17:44 GMT"));
    assert_true(a == b);
    assert_true(a.find("x\r\nDate: \r\nHTTP/1.1 400 Bad Request\r\nDate: \r\nContent-Length: 0") != std::string::npos);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_conn_corpus_replay),
                                       cmocka_unit_test(test_conn_oracle_masks_only_dates)};
    return cmocka_run_group_tests_name("conn_corpus", tests, nullptr, nullptr);
}
