// The one place that knows which backends exist (port.h, make_port).
#include <cerrno>

#include "epoll/epoll_port.h"
#include "loop/port.h"
#include "weir.h"

namespace weir {

int make_port(uint32_t backend, std::unique_ptr<Port> *out) {
    switch (backend) {
    case WEIR_BACKEND_EPOLL:
        *out = make_epoll_port();
        return *out ? 0 : -ENOMEM;
    case WEIR_BACKEND_URING:
        return WEIR_E_UNAVAILABLE; // lib/uring is not built yet
    default:
        return -EINVAL;
    }
}

} // namespace weir
