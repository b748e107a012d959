// weir_respond_many: one ABI crossing for a batch of answers (the Go binding
// answers a whole poll's worth of requests with one cgo call).
#include <cerrno>

#include "guard.h"
#include "weir.h"

WEIR_EXPORT int weir_respond_many(weir_answer_t *answers, size_t n) {
    if (n == 0)
        return 0;
    if (!answers)
        return -EINVAL;
    return weir::guard([&]() -> int {
        int ok = 0;
        for (size_t i = 0; i < n; ++i) {
            weir_answer_t &a = answers[i];
            a.result = weir_respond(a.ex, a.status, a.headers, a.num_headers, a.body, a.body_len, a.flags);
            if (a.result == 0)
                ok++;
        }
        return ok;
    });
}
