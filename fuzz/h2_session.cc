// libFuzzer target: the HTTP/2 session (lib/h2) under its oracle, frames in
// and actions out. The oracle is fuzz/oracle/h2.h, shared with the unit test
// that replays the corpus (tests/unit/h2/test_h2_corpus.cc).
#include <cstdio>
#include <cstdlib>

#include "oracle/h2.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (const char *why = h2_fuzz::one(data, size)) {
        fprintf(stderr, "h2 oracle: %s\n", why);
        abort();
    }
    return 0;
}
