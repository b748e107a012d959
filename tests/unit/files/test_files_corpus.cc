// Replays every seed in fuzz/corpus/files through the fuzzer's own oracle
// (fuzz/oracle/files.h), so a corpus regression fails without clang.
#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cmocka_cxx.h"
#include "../../../fuzz/oracle/files.h"

namespace {

std::vector<std::string> files_in(const std::string &dir) {
    std::vector<std::string> out;
    DIR *d = opendir(dir.c_str());
    assert_non_null(d);
    while (struct dirent *e = readdir(d))
        if (e->d_name[0] != '.')
            out.push_back(dir + "/" + e->d_name);
    closedir(d);
    return out;
}

std::string slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void test_files_corpus_replay(void **) {
    std::vector<std::string> files = files_in(std::string(WEIR_SOURCE_DIR) + "/fuzz/corpus/files");
    assert_true(files.size() >= 20);
    for (const std::string &p : files) {
        std::string data = slurp(p);
        if (const char *why = files_fuzz::one(reinterpret_cast<const uint8_t *>(data.data()), data.size())) {
            print_error("%s: %s\n", p.c_str(), why);
            fail();
        }
    }
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_files_corpus_replay)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
