// libFuzzer target: lib/files' decision and parsers under their invariants.
// The oracle is fuzz/oracle/files.h, shared with the unit test that replays the corpus.
#include <cstdio>
#include <cstdlib>

#include "oracle/files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (const char *why = files_fuzz::one(data, size)) {
        fprintf(stderr, "files oracle: %s\n", why);
        abort();
    }
    return 0;
}
