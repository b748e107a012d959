// Vector scans, after picohttpparser's findchar_fast (SSE4.2 PCMPESTRI over
// byte ranges) plus an AVX2 variant that tests 32 bytes with three compares.
// Function-level target attributes keep the rest of the build baseline x86-64.
#include "http1/scan.h"

#include <atomic>
#include <cstring>

#include "http1/chars.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WEIR_X86 1
#endif

namespace weir::http1 {
namespace {

template <uint8_t Cls> const char *scan_scalar(const char *p, const char *end) {
    // Unrolled by four: values and targets are mostly short, the branch on
    // the loop bound costs as much as the table load.
    while (end - p >= 4) {
        if (!is(static_cast<unsigned char>(p[0]), Cls))
            return p;
        if (!is(static_cast<unsigned char>(p[1]), Cls))
            return p + 1;
        if (!is(static_cast<unsigned char>(p[2]), Cls))
            return p + 2;
        if (!is(static_cast<unsigned char>(p[3]), Cls))
            return p + 3;
        p += 4;
    }
    while (p < end && is(static_cast<unsigned char>(*p), Cls))
        p++;
    return p;
}

const char *value_scalar(const char *p, const char *end) { return scan_scalar<kValue>(p, end); }
const char *target_scalar(const char *p, const char *end) { return scan_scalar<kVisible>(p, end); }

// The '?' of a target found by a scan that does not look for it.
inline const char *with_query(const char *p, const char *e, const char **qmark) {
    const void *f = memchr(p, '?', static_cast<size_t>(e - p));
    *qmark = f ? static_cast<const char *>(f) : e;
    return e;
}

const char *target_query_scalar(const char *p, const char *end, const char **qmark) {
    return with_query(p, target_scalar(p, end), qmark);
}

#ifdef WEIR_X86
// Ranges of bytes that stop the scan, as PCMPESTRI's range mode reads them.
alignas(16) const char kValueStop[16] = {0x00, 0x08, 0x0A, 0x1F, 0x7F, 0x7F};
alignas(16) const char kTargetStop[16] = {0x00, 0x20, 0x7F, static_cast<char>(0xFF)};

__attribute__((target("sse4.2"))) const char *ranges_sse42(const char *p, const char *end, const char *stop,
                                                            int nstop) {
    const __m128i r = _mm_load_si128(reinterpret_cast<const __m128i *>(stop));
    while (end - p >= 16) {
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        int i = _mm_cmpestri(r, nstop, b, 16, _SIDD_UBYTE_OPS | _SIDD_CMP_RANGES | _SIDD_LEAST_SIGNIFICANT);
        if (i != 16)
            return p + i;
        p += 16;
    }
    return p;
}

__attribute__((target("sse4.2"))) const char *value_sse42(const char *p, const char *end) {
    return value_scalar(ranges_sse42(p, end, kValueStop, 6), end);
}
__attribute__((target("sse4.2"))) const char *target_sse42(const char *p, const char *end, const char **qmark) {
    return with_query(p, target_scalar(ranges_sse42(p, end, kTargetStop, 4), end), qmark);
}

// Signed byte compares: obs-text (0x80..0xFF) reads as negative, which is
// what lets one compare cover "below 0x21 or above 0x7E" for the target.
// Runs of 32 bytes or more end with one load that finishes at `end` (it
// overlaps bytes already tested, never leaves [start, end)), so no byte goes
// through the scalar loop.
__attribute__((target("avx2"))) inline unsigned value_bad32(__m256i b) {
    __m256i ctl = _mm256_and_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(0x20), b),
                                   _mm256_cmpgt_epi8(b, _mm256_set1_epi8(-1)));
    __m256i bad = _mm256_or_si256(_mm256_andnot_si256(_mm256_cmpeq_epi8(b, _mm256_set1_epi8(0x09)), ctl),
                                  _mm256_cmpeq_epi8(b, _mm256_set1_epi8(0x7F)));
    return static_cast<unsigned>(_mm256_movemask_epi8(bad));
}

__attribute__((target("avx2"))) inline unsigned target_bad32(__m256i b) {
    __m256i bad = _mm256_or_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(0x21), b),
                                  _mm256_cmpeq_epi8(b, _mm256_set1_epi8(0x7F)));
    return static_cast<unsigned>(_mm256_movemask_epi8(bad));
}

__attribute__((target("avx2"))) inline __m256i load32(const char *p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
}

__attribute__((target("avx2"))) const char *value_avx2(const char *p, const char *end) {
    if (end - p >= 32) {
        for (;;) {
            unsigned m = value_bad32(load32(p));
            if (m)
                return p + __builtin_ctz(m);
            p += 32;
            if (end - p < 32)
                break;
        }
        if (p == end)
            return end;
        unsigned m = value_bad32(load32(end - 32)) >> (32 - (end - p));
        return m ? p + __builtin_ctz(m) : end;
    }
    if (end - p >= 16) {
        unsigned m = value_bad16(load16(p));
        if (m)
            return p + __builtin_ctz(m);
        m = value_bad16(load16(end - 16)) >> (16 - (end - (p + 16)));
        return m ? p + 16 + __builtin_ctz(m) : end;
    }
    return value_scalar(p, end);
}

__attribute__((target("avx2"))) const char *target_avx2(const char *p, const char *end, const char **qmark) {
    const __m256i qm = _mm256_set1_epi8('?');
    const char *q = nullptr;
    if (end - p >= 32) {
        for (;;) {
            __m256i b = load32(p);
            unsigned m = target_bad32(b);
            unsigned qb = static_cast<unsigned>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, qm)));
            if (m) {
                const char *e = p + __builtin_ctz(m);
                qb &= (m & (0u - m)) - 1;
                if (!q)
                    q = qb ? p + __builtin_ctz(qb) : e;
                *qmark = q;
                return e;
            }
            if (qb && !q)
                q = p + __builtin_ctz(qb);
            p += 32;
            if (end - p < 32)
                break;
        }
        if (p == end) {
            *qmark = q ? q : end;
            return end;
        }
        const int shift = static_cast<int>(32 - (end - p));
        __m256i b = load32(end - 32);
        unsigned m = target_bad32(b) >> shift;
        unsigned qb = static_cast<unsigned>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, qm))) >> shift;
        const char *e = m ? p + __builtin_ctz(m) : end;
        if (m)
            qb &= (m & (0u - m)) - 1;
        if (!q)
            q = qb ? p + __builtin_ctz(qb) : e;
        *qmark = q;
        return e;
    }
    return target_query_scalar(p, end, qmark);
}
#endif

const ScanOps kScalarOps{kScanScalar, value_scalar, target_query_scalar};
#ifdef WEIR_X86
const ScanOps kSse42Ops{kScanSse42, value_sse42, target_sse42};
const ScanOps kAvx2Ops{kScanAvx2, value_avx2, target_avx2};
#endif

const ScanOps *pick(int level) {
#ifdef WEIR_X86
    __builtin_cpu_init();
    if (level < 0 || level >= kScanAvx2)
        if (__builtin_cpu_supports("avx2"))
            return &kAvx2Ops;
    if (level < 0 || level >= kScanSse42)
        if (__builtin_cpu_supports("sse4.2"))
            return &kSse42Ops;
#else
    (void)level;
#endif
    return &kScalarOps;
}

} // namespace

namespace detail {

// Relaxed: the pointer only ever names one of three immutable tables, and a
// racing first use just picks the same one twice.
std::atomic<const ScanOps *> g_ops{pick(kScanAuto)};

const ScanOps *resolve_ops() {
    const ScanOps *o = pick(kScanAuto);
    g_ops.store(o, std::memory_order_relaxed);
    return o;
}

} // namespace detail

int scan_force(int level) {
    const ScanOps *o = pick(level);
    detail::g_ops.store(o, std::memory_order_relaxed);
    return o->level;
}

int scan_level() { return scan_ops().level; }

const char *scan_value(const char *p, const char *end) { return scan_ops().value(p, end); }
const char *scan_target(const char *p, const char *end) {
    const char *q;
    return scan_ops().target(p, end, &q);
}
const char *scan_target_query(const char *p, const char *end, const char **qmark) {
    return scan_ops().target(p, end, qmark);
}

} // namespace weir::http1
