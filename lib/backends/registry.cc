// The table behind registry.h, and the factory the loop calls through
// loop/port.h. This is the only file that includes more than one backend.
#include "backends/registry.h"

#include <cerrno>
#include <cstring>

#include "epoll/epoll_port.h"
#include "uring/uring_port.h"
#include "uring/uring_probe.h"
#include "weir.h"

namespace weir {
namespace {

int make_epoll(std::unique_ptr<Port> *out) {
    *out = make_epoll_port();
    return *out ? 0 : -ENOMEM;
}

const char *epoll_unavailable() { return nullptr; }
const char *uring_unavailable() { return uring_caps().missing; }

constexpr BackendEntry kBackends[] = {
    {WEIR_BACKEND_EPOLL, "epoll", "epoll", make_epoll, epoll_unavailable},
    // WEIR_E_UNAVAILABLE where the kernel lacks what it needs (uring_probe.h).
    {WEIR_BACKEND_URING, "uring", "io_uring", make_uring_port, uring_unavailable},
};

constexpr size_t kCount = sizeof kBackends / sizeof kBackends[0];

// weir_backend_name's loop from 1 until null relies on the ids being dense.
constexpr bool dense() {
    for (size_t i = 0; i < kCount; i++)
        if (kBackends[i].id != i + 1)
            return false;
    return true;
}
static_assert(dense(), "WEIR_BACKEND_* must be dense from 1, in the table's order");

} // namespace

const BackendEntry *backend_table(size_t *n) {
    *n = kCount;
    return kBackends;
}

const BackendEntry *backend_entry(uint32_t id) {
    return id >= 1 && id <= kCount ? &kBackends[id - 1] : nullptr;
}

const BackendEntry *backend_named(const char *name) {
    if (!name)
        return nullptr;
    for (const BackendEntry &b : kBackends)
        if (std::strcmp(b.name, name) == 0)
            return &b;
    return nullptr;
}

int make_port(uint32_t backend, std::unique_ptr<Port> *out) {
    const BackendEntry *b = backend_entry(backend);
    return b ? b->make(out) : -EINVAL;
}

const char *backend_unavailable_reason(uint32_t backend) {
    const BackendEntry *b = backend_entry(backend);
    const char *why = b ? b->unavailable() : nullptr;
    return why ? why : "not in this build";
}

const char *backend_long_name(uint32_t backend) {
    const BackendEntry *b = backend_entry(backend);
    return b ? b->long_name : "?";
}

} // namespace weir
