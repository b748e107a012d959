// Vector scans for the two long runs of a request head: the request-target and
// field values. Each returns the first byte in [p, end) outside its class (or
// end), reading nothing outside [p, end) so input may end at a guard page.
//
// The implementation is picked once at run time (AVX2, else SSE4.2, else
// scalar) so the default build stays portable; scan_force() lets tests and the
// benchmark pin one, to compare the vector paths with the scalar one.
//
// The parser does not call these per field: it reads the level once per
// request (scan_ops()) and tests the first 16 bytes inline with SSE2 (baseline
// x86-64, no dispatch), which ends most values and targets; only longer runs
// go through the level's function.
#pragma once

#include <atomic>
#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#define WEIR_SSE2 1
#endif

namespace weir::http1 {

enum ScanLevel : int { kScanAuto = -1, kScanScalar = 0, kScanSse42 = 1, kScanAvx2 = 2 };

// Pins the implementation (kScanAuto: best the CPU has). A level the CPU lacks
// falls back to the best one below it. Returns the level now in use. Not
// thread-safe against concurrent parses: for tests and benchmarks only.
int scan_force(int level);
// The level in use.
int scan_level();

// First byte that is not VCHAR / obs-text / SP / HTAB.
const char *scan_value(const char *p, const char *end);
// First byte that is not visible ASCII (0x21..0x7E).
const char *scan_target(const char *p, const char *end);
// scan_target that also finds the first '?' before the byte it returns
// (*qmark = that '?', or the returned pointer when there is none), so the
// path/query split needs no second pass.
const char *scan_target_query(const char *p, const char *end, const char **qmark);

struct ScanOps {
    int level;
    const char *(*value)(const char *, const char *);
    const char *(*target)(const char *, const char *, const char **);
};

namespace detail {
// Resolved at load time (a static initializer in scan.cc); the null check in
// scan_ops() covers a parse from another library's static initializer.
extern std::atomic<const ScanOps *> g_ops;
const ScanOps *resolve_ops();
} // namespace detail

inline const ScanOps &scan_ops() {
    const ScanOps *o = detail::g_ops.load(std::memory_order_relaxed);
    if (__builtin_expect(o == nullptr, 0))
        o = detail::resolve_ops();
    return *o;
}

#ifdef WEIR_SSE2
// Bit i set when byte i of b is not a field-value byte. Signed compares:
// obs-text (0x80..0xFF) reads as negative and passes.
inline unsigned value_bad16(__m128i b) {
    __m128i ctl = _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(0x20), b), _mm_cmpgt_epi8(b, _mm_set1_epi8(-1)));
    __m128i bad = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8(0x09)), ctl),
                               _mm_cmpeq_epi8(b, _mm_set1_epi8(0x7F)));
    return static_cast<unsigned>(_mm_movemask_epi8(bad));
}
// Bit i set when byte i of b is not 0x21..0x7E (obs-text is negative: bad).
inline unsigned target_bad16(__m128i b) {
    __m128i bad = _mm_or_si128(_mm_cmpgt_epi8(_mm_set1_epi8(0x21), b), _mm_cmpeq_epi8(b, _mm_set1_epi8(0x7F)));
    return static_cast<unsigned>(_mm_movemask_epi8(bad));
}
inline __m128i load16(const char *p) { return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)); }
#endif

// scan_value for the parser: lo is the start of the caller's buffer, so a
// value that ends within 16 bytes of the buffer's end is tested with one load
// that ends at `end` and starts at or after lo (inside the buffer).
inline const char *value_end(const ScanOps &ops, const char *lo, const char *p, const char *end) {
#ifdef WEIR_SSE2
    if (ops.level != kScanScalar) {
        if (end - p >= 16) {
            unsigned m = value_bad16(load16(p));
            if (m)
                return p + __builtin_ctz(m);
            p += 16;
            if (end - p >= 16) {
                m = value_bad16(load16(p));
                if (m)
                    return p + __builtin_ctz(m);
                return ops.value(p + 16, end);
            }
            m = value_bad16(load16(end - 16)) >> (16 - (end - p));
            return m ? p + __builtin_ctz(m) : end;
        }
        if (end - lo >= 16) {
            unsigned m = value_bad16(load16(end - 16)) >> (16 - (end - p));
            return m ? p + __builtin_ctz(m) : end;
        }
    }
#else
    (void)lo;
#endif
    return ops.value(p, end);
}

// scan_target_query for the parser, with the same inline first block.
inline const char *target_end(const ScanOps &ops, const char *p, const char *end, const char **qmark) {
#ifdef WEIR_SSE2
    if (ops.level != kScanScalar && end - p >= 16) {
        __m128i b = load16(p);
        unsigned m = target_bad16(b);
        unsigned q = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('?'))));
        if (m) {
            const char *e = p + __builtin_ctz(m);
            q &= (m & (0u - m)) - 1; // '?' before the first bad byte only
            *qmark = q ? p + __builtin_ctz(q) : e;
            return e;
        }
        if (q) {
            *qmark = p + __builtin_ctz(q);
            const char *dummy;
            return ops.target(p + 16, end, &dummy);
        }
        const char *e = ops.target(p + 16, end, qmark);
        return e;
    }
#endif
    return ops.target(p, end, qmark);
}

} // namespace weir::http1
