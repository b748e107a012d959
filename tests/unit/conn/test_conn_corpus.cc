// Replays every seed in fuzz/corpus/conn through the conn fuzzer's own
// split-invariance oracle, so a regression fails without clang.
#include "../../../fuzz/oracle/conn.h"

#include "support/corpus.h"

static void test_conn_corpus_replay(void **) { testcorpus::replay("conn", conn_fuzz::one, 10); }

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_conn_corpus_replay)};
    return cmocka_run_group_tests_name("conn_corpus", tests, nullptr, nullptr);
}
