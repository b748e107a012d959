// The one guard every extern "C" entry point goes through: no C++ exception
// crosses the ABI. bad_alloc becomes -ENOMEM; anything else -EIO (it would be
// a bug in weir, and the caller still gets an errno instead of a terminate).
#pragma once

#include <cerrno>
#include <new>

#define WEIR_EXPORT extern "C" __attribute__((visibility("default")))

namespace weir {

template <typename F> inline int guard(F &&f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

// For entry points that return nothing (destroy, *_init): swallow and move on.
template <typename F> inline void guard_void(F &&f) noexcept {
    try {
        f();
    } catch (...) {
    }
}

} // namespace weir
