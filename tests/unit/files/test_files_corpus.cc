// Replays every seed in fuzz/corpus/files through the fuzzer's own oracle
// (fuzz/oracle/files.h), so a corpus regression fails without clang.
#include "../../../fuzz/oracle/files.h"

#include "support/corpus.h"

static void test_files_corpus_replay(void **) { testcorpus::replay("files", files_fuzz::one, 20); }

int main() {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_files_corpus_replay)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
