// libFuzzer target: the request parser under its split-invariance oracle.
// The oracle is fuzz/oracle/parser.h, shared with the unit test that replays the corpus.
#include <cstdio>
#include <cstdlib>

#include "oracle/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (const char *why = parser_fuzz::one(data, size)) {
        fprintf(stderr, "parser oracle: %s\n", why);
        abort();
    }
    return 0;
}
