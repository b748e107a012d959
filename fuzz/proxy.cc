// libFuzzer target: the PROXY protocol parser under its prefix-invariance oracle.
// The oracle is fuzz/oracle/proxy.h, shared with the unit test that replays the corpus.
#include <cstdio>
#include <cstdlib>

#include "oracle/proxy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (const char *why = proxy_fuzz::one(data, size)) {
        fprintf(stderr, "proxy oracle: %s\n", why);
        abort();
    }
    return 0;
}
