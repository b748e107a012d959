// Replays every seed in fuzz/corpus/proxy through the proxy fuzzer's own
// prefix-invariance oracle, so a regression fails without clang.
#include "../../../fuzz/oracle/proxy.h"

#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cmocka_cxx.h"

static void test_proxy_corpus_replay(void **) {
    std::string dir = std::string(WEIR_SOURCE_DIR) + "/fuzz/corpus/proxy";
    DIR *d = opendir(dir.c_str());
    assert_non_null(d);
    int files = 0;
    while (struct dirent *e = readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        std::ifstream f(dir + "/" + e->d_name, std::ios::binary);
        std::ostringstream ss;
        ss << f.rdbuf();
        std::string data = ss.str();
        if (const char *why = proxy_fuzz::one(reinterpret_cast<const uint8_t *>(data.data()), data.size()))
            fail_msg("%s: %s", e->d_name, why);
        files++;
    }
    closedir(d);
    assert_true(files >= 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_proxy_corpus_replay)};
    return cmocka_run_group_tests_name("proxy_corpus", tests, nullptr, nullptr);
}
