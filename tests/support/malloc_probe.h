// Interposes malloc, calloc and realloc for one test binary (the static
// library's calls resolve to them): each allocation first asks the test's
// malloc_probe_allow(), which may count it or make it fail (false: NULL).
// Include in exactly one file of the binary and define malloc_probe_allow()
// there. Under ASan or TSan the allocator is the sanitizer's (a block from
// __libc_malloc given to its free would crash): WEIR_NO_INTERPOSE is defined,
// nothing is interposed, and the tests that need the probe skip.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WEIR_NO_INTERPOSE 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WEIR_NO_INTERPOSE 1
#endif
#endif

// The test's: true lets the allocation through.
bool malloc_probe_allow();

#ifndef WEIR_NO_INTERPOSE
extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *malloc(size_t n) { return malloc_probe_allow() ? __libc_malloc(n) : nullptr; }
void *calloc(size_t a, size_t b) { return malloc_probe_allow() ? __libc_calloc(a, b) : nullptr; }
void *realloc(void *p, size_t n) { return malloc_probe_allow() ? __libc_realloc(p, n) : nullptr; }
}
#endif
