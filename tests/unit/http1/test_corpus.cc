// Replays every seed in fuzz/corpus/parser and fuzz/corpus/chunked through
// the fuzzers' own oracles, so a corpus regression fails without clang.
#include "support/corpus.h" // before http1_check.h: its std headers before cmocka's fail()
#include "http1_check.h"

static void test_corpus_parser_replay(void **) { testcorpus::replay("parser", parser_fuzz::one, 20); }
static void test_corpus_chunked_replay(void **) { testcorpus::replay("chunked", chunked_fuzz::one, 20); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_parser_replay),
        cmocka_unit_test(test_corpus_chunked_replay),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
