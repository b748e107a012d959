// weir_respond_interim (0.4): a 1xx answer before the final one (103 Early
// Hints for net/http's WriteHeader(103), 100 Continue). In its own file so
// that the entry points of other 0.4 features do not meet it in engine.cc.
#include <cerrno>

#include "guard.h"
#include "loop/worker.h"
#include "weir.h"

WEIR_EXPORT int weir_respond_interim(weir_exchange *ex, int status, const weir_header_t *headers,
                                     size_t num_headers) {
    if (!ex || (num_headers && !headers))
        return -EINVAL;
    return weir::guard([&] { return weir::exchange_interim(ex, status, headers, num_headers); });
}
