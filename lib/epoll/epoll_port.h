// The epoll backend's port (lib/loop/port.h): edge-triggered readiness for the
// wake eventfd, the listener and every connection; accept4, read and sendmsg
// done at once and reported at once, so no operation is ever in flight.
#pragma once

#include <memory>

#include "loop/port.h"

namespace weir {

// nullptr when out of memory.
std::unique_ptr<Port> make_epoll_port();

} // namespace weir
