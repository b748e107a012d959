// The size rule of every caller-sized struct of weir.h (its ABI paragraph,
// docs/api.md §7), written once: a struct T begins with `uint32_t size`, and
// weir accepts any size from T's first size (where its last field of the 0.2
// layout ends, frozen below) up to sizeof(T) as this library knows it. For an
// input, the fields past the caller's size keep their defaults; for an
// output, they are left alone. Anything else is refused (-EINVAL at the C
// face): a smaller size cannot hold what every caller gives, a larger one is
// a header newer than this library, and 0 is a struct nobody initialised,
// never a request for the defaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "weir.h"

// Where field f of T ends: the size a caller whose struct stops after f has.
#define WEIR_END_OF(T, f) (offsetof(T, f) + sizeof(static_cast<T *>(nullptr)->f))

namespace weir::sized {

// The first size of each struct. Frozen: when a field is appended, these stay
// (the new field is then "past the size" for a caller built before it).
template <typename T> struct First;
template <> struct First<weir_config> {
    static constexpr size_t value = WEIR_END_OF(weir_config, log_user);
};
template <> struct First<weir_http1_limits> {
    static constexpr size_t value = WEIR_END_OF(weir_http1_limits, max_body);
};
template <> struct First<weir_http1_request> {
    static constexpr size_t value = WEIR_END_OF(weir_http1_request, headers);
};
template <> struct First<weir_http1_chunked> {
    static constexpr size_t value = WEIR_END_OF(weir_http1_chunked, reserved_);
};
// weir_metrics' first size is the end of closes (32 reasons since 0.2); the
// counters after it are left alone for a caller whose struct stops there.
template <> struct First<weir_metrics> {
    static constexpr size_t value = WEIR_END_OF(weir_metrics, closes);
};

// 0.4: file answers (weir_serve_file).
template <> struct First<weir_file_options> {
    static constexpr size_t value = WEIR_END_OF(weir_file_options, reserved_);
};

// 0.4: the adaptive pair (weir_adaptive_*).
template <> struct First<weir_adaptive_config> {
    static constexpr size_t value = WEIR_END_OF(weir_adaptive_config, lockout_ms);
};
template <> struct First<weir_adaptive_state> {
    static constexpr size_t value = WEIR_END_OF(weir_adaptive_state, last_error_permille);
};

template <typename T> constexpr size_t kFirst = First<T>::value;

template <typename T> constexpr bool size_ok(uint32_t size) { return size >= kFirst<T> && size <= sizeof(T); }

// An input: *out already holds every default; the caller's bytes replace
// them as far as its size reaches, and out->size becomes ours. false (out
// untouched) for a size outside the rule.
template <typename T> bool copy_in(const T *in, T *out) {
    const uint32_t n = in->size;
    if (!size_ok<T>(n))
        return false;
    std::memcpy(static_cast<void *>(out), in, n);
    out->size = sizeof(T);
    return true;
}

// An output: `full` as this library knows it, written into the caller's
// struct as far as its size reaches; its size and the bytes past it are left
// as they were. false (nothing written) for a size outside the rule.
template <typename T> bool copy_out(const T &full, T *out) {
    const uint32_t n = out->size;
    if (!size_ok<T>(n))
        return false;
    std::memcpy(static_cast<void *>(out), &full, n);
    out->size = n;
    return true;
}

} // namespace weir::sized
