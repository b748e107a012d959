// The one list of backends (DESIGN.md §1, §2). Everything that needs to know
// which backends exist asks this table: the port factory the engine calls
// (make_port, declared in loop/port.h so that the loop names no backend),
// the public names (weir_backend_name, weir_backend_by_name) and through them
// every test runner (tests/support/backend_probe --list) and weir-demo's
// --backend. A new backend is one row here and its own folder; lib/loop/
// does not change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "loop/port.h"

namespace weir {

struct BackendEntry {
    uint32_t id;           // WEIR_BACKEND_*: dense from 1, in the table's order
    const char *name;      // the short name: weir_backend_name, WEIR_TEST_BACKEND, --backend
    const char *long_name; // what logs call it ("io_uring")
    int (*make)(std::unique_ptr<Port> *out);
    // Why make answered WEIR_E_UNAVAILABLE here (a static string), or null
    // when it would not.
    const char *(*unavailable)();
};

// Every backend of this build, in WEIR_BACKEND_* order; n set to the count.
const BackendEntry *backend_table(size_t *n);
// The entry of a WEIR_BACKEND_* value, or null.
const BackendEntry *backend_entry(uint32_t id);
// The entry named name (exact, case-sensitive), or null.
const BackendEntry *backend_named(const char *name);

} // namespace weir
