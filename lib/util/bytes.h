// A growable byte buffer that keeps its capacity: owned by pooled states, so
// after warm-up the request path appends without allocating.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace weir {

struct Bytes {
    char *p = nullptr;
    size_t len = 0;
    size_t cap = 0;

    Bytes() = default;
    Bytes(const Bytes &) = delete;
    Bytes &operator=(const Bytes &) = delete;
    ~Bytes() { std::free(p); }

    // false on allocation failure (the buffer is left as it was).
    bool reserve(size_t want) {
        if (want <= cap)
            return true;
        size_t n = cap ? cap : 256;
        while (n < want)
            n *= 2;
        char *q = static_cast<char *>(std::realloc(p, n));
        if (!q)
            return false;
        p = q;
        cap = n;
        return true;
    }
    bool append(const void *d, size_t n) {
        if (!reserve(len + n))
            return false;
        if (n)
            std::memcpy(p + len, d, n);
        len += n;
        return true;
    }
    bool append(const char *s) { return append(s, std::strlen(s)); }
    // The response writer's hint: room for n more bytes.
    bool reserve_more(size_t n) { return reserve(len + n); }
    void clear() { len = 0; }
    // Gives the memory back when it grew past keep (a one-off large answer).
    void shrink_to(size_t keep) {
        if (cap > keep) {
            std::free(p);
            p = nullptr;
            cap = 0;
        }
        len = 0;
    }
};

} // namespace weir
