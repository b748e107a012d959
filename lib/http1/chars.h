// Byte classes of RFC 9110/9112, as 256-entry tables built at compile time so
// the hot loops pay one load per byte and no branches on ranges.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace weir::http1 {

enum : uint8_t {
    kTchar = 0x01,   // token character (RFC 9110 5.6.2)
    kVisible = 0x02, // request-target byte: 0x21..0x7E
    kValue = 0x04,   // field-value byte: VCHAR, obs-text, SP, HTAB
    kHex = 0x08,     // HEXDIG
    kRegName = 0x10, // reg-name without '%': unreserved / sub-delims
    kDigit = 0x20,
};

constexpr std::array<uint8_t, 256> make_classes() {
    std::array<uint8_t, 256> t{};
    for (int c = 0; c < 256; c++) {
        uint8_t v = 0;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        bool digit = c >= '0' && c <= '9';
        if (alpha || digit)
            v |= kTchar;
        for (char x : {'!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~'})
            if (c == static_cast<unsigned char>(x))
                v |= kTchar;
        if (c >= 0x21 && c <= 0x7E)
            v |= kVisible;
        if ((c >= 0x20 && c <= 0x7E) || c >= 0x80 || c == '\t')
            v |= kValue;
        if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
            v |= kHex;
        if (alpha || digit)
            v |= kRegName;
        for (char x : {'-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '='})
            if (c == static_cast<unsigned char>(x))
                v |= kRegName;
        if (digit)
            v |= kDigit;
        t[c] = v;
    }
    return t;
}

inline constexpr std::array<uint8_t, 256> kClass = make_classes();

inline bool is(unsigned char c, uint8_t cls) { return (kClass[c] & cls) != 0; }
inline bool is_ows(unsigned char c) { return c == ' ' || c == '\t'; }

// The classes of eight bytes AND-ed, as a tree (a chain of eight ANDs is
// eight cycles of latency).
inline uint8_t and8(const unsigned char *b) {
    const unsigned x = (kClass[b[0]] & kClass[b[1]]) & (kClass[b[2]] & kClass[b[3]]);
    const unsigned y = (kClass[b[4]] & kClass[b[5]]) & (kClass[b[6]] & kClass[b[7]]);
    return static_cast<uint8_t>(x & y);
}

// Length of the run of class-cls bytes at the start of p[0, n): eight bytes
// per step (one test of their classes AND-ed) while all eight belong.
inline size_t run_of(const char *p, size_t n, uint8_t cls) {
    const unsigned char *u = reinterpret_cast<const unsigned char *>(p);
    size_t i = 0;
    while (n - i >= 8) {
        const unsigned char *b = u + i;
        if (!(and8(b) & cls))
            break;
        i += 8;
    }
    // Fewer than eight left after at least one whole step: the last eight
    // bytes in one step (those before i were tested and belong).
    if (i >= 8 && i < n && n - i < 8) {
        const unsigned char *b = u + n - 8;
        if (and8(b) & cls)
            return n;
    }
    while (i < n && (kClass[u[i]] & cls))
        i++;
    return i;
}

// ASCII case-insensitive compare of s[0,n) against a lowercase literal made
// of letters, digits and "-/:" only. OR-ing 0x20 folds case; it could also
// fold a control byte onto one of those (0x0D onto '-'), but every caller
// passes bytes already known to hold no controls (tokens, field values,
// targets), so the compare is exact. Eight bytes at a time.
inline bool eq_lower(const char *s, const char *lower, size_t n) {
    auto word8 = [](const char *x) {
        uint64_t w;
        memcpy(&w, x, 8);
        return w;
    };
    auto word4 = [](const char *x) {
        uint32_t w;
        memcpy(&w, x, 4);
        return w;
    };
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 <= n; i += 8)
            if ((word8(s + i) | 0x2020202020202020ull) != word8(lower + i))
                return false;
        // The tail as the last eight bytes (overlapping ones already equal).
        return i == n || (word8(s + n - 8) | 0x2020202020202020ull) == word8(lower + n - 8);
    }
    if (n >= 4) // two overlapping words cover 4..7 bytes
        return (word4(s) | 0x20202020u) == word4(lower) && (word4(s + n - 4) | 0x20202020u) == word4(lower + n - 4);
    for (size_t i = 0; i < n; i++)
        if ((static_cast<unsigned char>(s[i]) | 0x20) != static_cast<unsigned char>(lower[i]))
            return false;
    return true;
}

} // namespace weir::http1
