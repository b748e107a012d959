// An owned weir_handover (weir_handover_offer / take_over), freed with the
// API's own call when the test's scope ends, pass or fail, so a failing
// case does not leak its socket path or its listeners into the next.
#pragma once

#include <memory>

#include "weir.h"

struct HandoverFree {
    void operator()(weir_handover *h) const { weir_handover_free(h); }
};
using HandoverPtr = std::unique_ptr<weir_handover, HandoverFree>;
