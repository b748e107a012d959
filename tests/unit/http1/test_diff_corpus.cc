// Replays every seed of fuzz/corpus/diff through the differential fuzzer's
// oracle (fuzz/oracle/diff.h: weir against llhttp, the listed classes of
// deliberate strictness allowed), so a change to lib/http1 that makes weir
// accept what llhttp refuses, or frame a body differently, fails here without
// clang. Needs llhttp's C sources (Debian's node-llhttp, which
// scripts/bootstrap installs); the Makefile builds this test with them when
// they are present, and without them it skips and says why.
#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifdef WEIR_HAVE_LLHTTP
#include "../../../fuzz/oracle/diff.h"
#endif
#include "http1_check.h"

static void test_diff_corpus_replay(void **) {
#ifndef WEIR_HAVE_LLHTTP
    print_message("llhttp's C sources were not found at build time (scripts/bootstrap installs node-llhttp)\n");
    skip();
#else
    const std::string dir = std::string(WEIR_SOURCE_DIR) + "/fuzz/corpus/diff";
    DIR *d = opendir(dir.c_str());
    assert_non_null(d);
    std::vector<std::string> files;
    while (struct dirent *e = readdir(d))
        if (e->d_name[0] != '.')
            files.push_back(dir + "/" + e->d_name);
    closedir(d);
    assert_true(files.size() >= 100);
    size_t expected = 0, findings = 0;
    for (const std::string &p : files) {
        std::ifstream f(p, std::ios::binary);
        std::ostringstream ss;
        ss << f.rdbuf();
        const std::string in = ss.str();
        diff_fuzz::Outcome o = diff_fuzz::compare(reinterpret_cast<const uint8_t *>(in.data()), in.size());
        if (o.what && !o.cls) {
            print_error("%s: %s (weir %d, llhttp %d %s)\n", p.c_str(), o.what, o.w.code, o.l.code, o.l.reason);
            findings++;
        }
        expected += o.cls != nullptr;
    }
    // The corpus shows the classes: most of its seeds disagree on purpose.
    print_message("%zu seeds, %zu disagreeing in a listed class, %zu findings\n", files.size(), expected, findings);
    assert_int_equal(findings, 0);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_corpus_replay),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
