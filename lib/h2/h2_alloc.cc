// nghttp2's allocator for one session: freed blocks of a few size classes
// are kept by the session (MemCache) and given again, so the per-stream and
// per-field allocations of nghttp2 (stream, outbound items, the nv copy,
// header buffers) do not go through malloc and free on every request of a
// connection. Per session, not per thread: no TLS lookup per allocation
// (a thread_local in a shared library costs a __tls_get_addr call, more
// than glibc's own tcache saves), and nothing outlives the session. Bounded:
// kKeepBytes per class.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "h2/h2_internal.h"

namespace weir::h2_detail {

struct MemCache {
    struct Node {
        Node *next;
    };
    Node *free[8] = {};
    uint32_t n[8] = {};
};

namespace {

constexpr size_t kClasses = 8; // 32, 64, ..., 4096 bytes (MemCache's arrays)
constexpr size_t kMinShift = 5;
constexpr uint32_t kLarge = 0xff; // plain malloc, size in the head
constexpr size_t kKeepBytes = 8 * 1024;

// Before every block: its class (or kLarge and its size). 16 bytes keep
// the payload aligned as malloc's.
struct alignas(16) Head {
    uint32_t cls;
    uint32_t pad;
    size_t size; // usable bytes
};

size_t class_of(size_t size) {
    if (size <= (size_t{1} << kMinShift))
        return 0;
    size_t c = 64 - static_cast<size_t>(__builtin_clzl(size - 1)) - kMinShift; // ceil(log2(size)) - 5
    return c < kClasses ? c : kClasses; // kClasses: too large for the cache
}

void *h2_malloc(size_t size, void *u) {
    MemCache &cache = *static_cast<MemCache *>(u);
    size_t c = class_of(size ? size : 1);
    if (c < kClasses) {
        if (MemCache::Node *b = cache.free[c]) {
            cache.free[c] = b->next;
            cache.n[c]--;
            return b;
        }
        size = size_t{1} << (c + kMinShift);
    }
    Head *h = static_cast<Head *>(std::malloc(sizeof(Head) + size));
    if (!h)
        return nullptr;
    h->cls = c < kClasses ? static_cast<uint32_t>(c) : kLarge;
    h->size = size;
    return h + 1;
}

void h2_free(void *p, void *u) {
    MemCache &cache = *static_cast<MemCache *>(u);
    if (!p)
        return;
    Head *h = static_cast<Head *>(p) - 1;
    uint32_t c = h->cls;
    if (c != kLarge && cache.n[c] < kKeepBytes >> (c + kMinShift)) {
        auto *b = static_cast<MemCache::Node *>(p);
        b->next = cache.free[c];
        cache.free[c] = b;
        cache.n[c]++;
        return;
    }
    std::free(h);
}

void *h2_calloc(size_t nmemb, size_t size, void *u) {
    if (size && nmemb > SIZE_MAX / size)
        return nullptr;
    void *p = h2_malloc(nmemb * size, u);
    if (p)
        std::memset(p, 0, nmemb * size);
    return p;
}

void *h2_realloc(void *p, size_t size, void *u) {
    if (!p)
        return h2_malloc(size, u);
    Head *h = static_cast<Head *>(p) - 1;
    if (size <= h->size && size > 0)
        return p; // fits where it is
    void *q = h2_malloc(size, u);
    if (!q)
        return nullptr; // p stays valid, as realloc's
    std::memcpy(q, p, h->size < size ? h->size : size);
    h2_free(p, u);
    return q;
}

} // namespace

MemCache *mem_cache_new() { return new (std::nothrow) MemCache(); }

void mem_cache_del(MemCache *m) {
    if (!m)
        return;
    for (size_t c = 0; c < kClasses; c++)
        while (MemCache::Node *b = m->free[c]) {
            m->free[c] = b->next;
            std::free(reinterpret_cast<Head *>(b) - 1);
        }
    delete m;
}

nghttp2_mem session_mem(MemCache *m) { return {m, h2_malloc, h2_free, h2_calloc, h2_realloc}; }

} // namespace weir::h2_detail
