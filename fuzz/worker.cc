// libFuzzer target: the shared worker (lib/loop) through a fake port, with a
// driven host that streams answers, reads streamed bodies, upgrades, answers
// from a file and sends interim answers. The oracle is fuzz/oracle/worker.h,
// shared with the unit test that replays the corpus.
#include <cstdio>
#include <cstdlib>

#include "oracle/worker.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (const char *why = worker_fuzz::one(data, size)) {
        fprintf(stderr, "worker oracle: %s\n", why);
        abort();
    }
    return 0;
}
