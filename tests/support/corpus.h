// Replays a fuzz target's seed corpus (fuzz/corpus/NAME) through the
// target's own oracle, so a corpus regression fails without clang. Every
// corpus test calls this one; each checks it found at least `least` seeds,
// so a moved or emptied folder fails instead of passing on nothing.
#pragma once

#include <dirent.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cmocka_cxx.h"

namespace testcorpus {

inline std::vector<std::string> files_in(const std::string &dir) {
    std::vector<std::string> out;
    DIR *d = opendir(dir.c_str());
    assert_non_null(d);
    while (struct dirent *e = readdir(d))
        if (e->d_name[0] != '.')
            out.push_back(dir + "/" + e->d_name);
    closedir(d);
    return out;
}

inline std::string slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// one(data, size) returns nullptr or why the input broke the oracle.
template <typename F> void replay(const char *name, F one, size_t least) {
    std::vector<std::string> files = files_in(std::string(WEIR_SOURCE_DIR) + "/fuzz/corpus/" + name);
    assert_true(files.size() >= least);
    for (const std::string &p : files) {
        std::string data = slurp(p);
        if (const char *why = one(reinterpret_cast<const uint8_t *>(data.data()), data.size())) {
            print_error("%s: %s\n", p.c_str(), why);
            fail();
        }
    }
}

} // namespace testcorpus
