// Replays every seed in fuzz/corpus/parser and fuzz/corpus/chunked through
// the fuzzers' own oracles, so a corpus regression fails without clang.
#include <dirent.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "http1_check.h"

static std::vector<std::string> files_in(const std::string &dir) {
    std::vector<std::string> out;
    DIR *d = opendir(dir.c_str());
    assert_non_null(d);
    while (struct dirent *e = readdir(d))
        if (e->d_name[0] != '.')
            out.push_back(dir + "/" + e->d_name);
    closedir(d);
    return out;
}

static std::string slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

template <typename F> static void replay(const char *name, F one) {
    std::vector<std::string> files = files_in(std::string(WEIR_SOURCE_DIR) + "/fuzz/corpus/" + name);
    assert_true(files.size() >= 20);
    for (const std::string &p : files) {
        std::string data = slurp(p);
        if (const char *why = one(reinterpret_cast<const uint8_t *>(data.data()), data.size())) {
            print_error("%s: %s\n", p.c_str(), why);
            fail();
        }
    }
}

static void test_corpus_parser_replay(void **) { replay("parser", parser_fuzz::one); }
static void test_corpus_chunked_replay(void **) { replay("chunked", chunked_fuzz::one); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_parser_replay),
        cmocka_unit_test(test_corpus_chunked_replay),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
