// Replays every seed in fuzz/corpus/proxy through the proxy fuzzer's own
// prefix-invariance oracle, so a regression fails without clang.
#include "../../../fuzz/oracle/proxy.h"

#include "support/corpus.h"

static void test_proxy_corpus_replay(void **) { testcorpus::replay("proxy", proxy_fuzz::one, 10); }

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_proxy_corpus_replay)};
    return cmocka_run_group_tests_name("proxy_corpus", tests, nullptr, nullptr);
}
