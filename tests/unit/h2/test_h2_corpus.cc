// Replays every seed in fuzz/corpus/h2_session through the h2 fuzzer's own
// oracle (fuzz/oracle/h2.h), so a regression on a seed fails without clang.
#include "../../../fuzz/oracle/h2.h"
#include "support/corpus.h"

static void test_h2_corpus_replay(void **) { testcorpus::replay("h2_session", h2_fuzz::one, 5); }

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_h2_corpus_replay)};
    return cmocka_run_group_tests_name("h2_corpus", tests, nullptr, nullptr);
}
