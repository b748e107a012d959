// A name for the calling thread: the address of a thread_local (one per
// thread, program-wide). The worker compares it with its owner to pick the
// direct answer path; the io_uring port with the thread its ring was enabled
// on (SINGLE_ISSUER).
#pragma once

#include <cstdint>

namespace weir {

inline thread_local char tl_thread_token;
inline uintptr_t thread_token() { return reinterpret_cast<uintptr_t>(&tl_thread_token); }

} // namespace weir
