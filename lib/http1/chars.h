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

// ASCII case-insensitive compare of s[0,n) against a lowercase literal made
// of letters, digits and "-/:" only. OR-ing 0x20 folds case; it could also
// fold a control byte onto one of those (0x0D onto '-'), but every caller
// passes bytes already known to hold no controls (tokens, field values,
// targets), so the compare is exact. Eight bytes at a time.
inline bool eq_lower(const char *s, const char *lower, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t a, b;
        memcpy(&a, s + i, 8);
        memcpy(&b, lower + i, 8);
        if ((a | 0x2020202020202020ull) != b)
            return false;
    }
    for (; i < n; i++)
        if ((static_cast<unsigned char>(s[i]) | 0x20) != static_cast<unsigned char>(lower[i]))
            return false;
    return true;
}

} // namespace weir::http1
