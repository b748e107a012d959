// libFuzzer target: the chunked decoder under its split-invariance oracle.
// The oracle is fuzz/oracle/chunked.h, shared with the unit test that replays the corpus.
#include <cstdio>
#include <cstdlib>

#include "oracle/chunked.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (const char *why = chunked_fuzz::one(data, size)) {
        fprintf(stderr, "chunked oracle: %s\n", why);
        abort();
    }
    return 0;
}
