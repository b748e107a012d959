// Replays every seed in fuzz/corpus/conn through the conn fuzzer's own
// split-invariance oracle, so a regression fails without clang.
#include "../../../fuzz/oracle/conn.h"

#include <dirent.h>

#include <fstream>
#include <sstream>

#include "cmocka_cxx.h"

static void test_conn_corpus_replay(void **) {
    std::string dir = std::string(WEIR_SOURCE_DIR) + "/fuzz/corpus/conn";
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
        if (const char *why = conn_fuzz::one(reinterpret_cast<const uint8_t *>(data.data()), data.size()))
            fail_msg("%s: %s", e->d_name, why);
        files++;
    }
    closedir(d);
    assert_true(files >= 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_conn_corpus_replay)};
    return cmocka_run_group_tests_name("conn_corpus", tests, nullptr, nullptr);
}
