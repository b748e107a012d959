// The one place that knows which backends exist (port.h, make_port).
#include <cerrno>

#include "epoll/epoll_port.h"
#include "loop/port.h"
#include "uring/uring_port.h"
#include "uring/uring_probe.h"
#include "weir.h"

namespace weir {

int make_port(uint32_t backend, std::unique_ptr<Port> *out) {
    switch (backend) {
    case WEIR_BACKEND_EPOLL:
        *out = make_epoll_port();
        return *out ? 0 : -ENOMEM;
    case WEIR_BACKEND_URING:
        return make_uring_port(out); // WEIR_E_UNAVAILABLE where the kernel lacks what it needs
    default:
        return -EINVAL;
    }
}

const char *backend_unavailable_reason(uint32_t backend) {
    if (backend == WEIR_BACKEND_URING && uring_caps().missing)
        return uring_caps().missing;
    return "not in this build";
}

} // namespace weir
