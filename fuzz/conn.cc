// libFuzzer target: the connection state machine under its split-invariance oracle.
// The oracle is fuzz/oracle/conn.h, shared with the unit test that replays the corpus.
#include <cstdio>
#include <cstdlib>

#include "oracle/conn.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (const char *why = conn_fuzz::one(data, size)) {
        fprintf(stderr, "conn oracle: %s\n", why);
        abort();
    }
    return 0;
}
