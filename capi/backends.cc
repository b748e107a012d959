// weir_backend_name and weir_backend_by_name: the backends' names, from the
// one table (lib/backends/registry.h), so no runner or binding keeps a list.
#include <cerrno>

#include "backends/registry.h"
#include "guard.h"
#include "weir.h"

WEIR_EXPORT const char *weir_backend_name(uint32_t backend) {
    const weir::BackendEntry *b = weir::backend_entry(backend);
    return b ? b->name : nullptr;
}

WEIR_EXPORT int weir_backend_by_name(const char *name) {
    const weir::BackendEntry *b = weir::backend_named(name);
    return b ? static_cast<int>(b->id) : -EINVAL;
}
