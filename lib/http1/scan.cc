// Vector scans, after picohttpparser's findchar_fast (SSE4.2 PCMPESTRI over
// byte ranges) plus an AVX2 variant that tests 32 bytes with three compares.
// Function-level target attributes keep the rest of the build baseline x86-64.
#include "http1/scan.h"

#include <atomic>

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
__attribute__((target("sse4.2"))) const char *target_sse42(const char *p, const char *end) {
    return target_scalar(ranges_sse42(p, end, kTargetStop, 4), end);
}

// Signed byte compares: obs-text (0x80..0xFF) reads as negative, which is
// what lets one compare cover "below 0x21 or above 0x7E" for the target.
__attribute__((target("avx2"))) const char *value_avx2(const char *p, const char *end) {
    const __m256i sp = _mm256_set1_epi8(0x20), neg = _mm256_set1_epi8(-1);
    const __m256i tab = _mm256_set1_epi8(0x09), del = _mm256_set1_epi8(0x7F);
    while (end - p >= 32) {
        __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
        __m256i ctl = _mm256_and_si256(_mm256_cmpgt_epi8(sp, b), _mm256_cmpgt_epi8(b, neg));
        __m256i bad = _mm256_or_si256(_mm256_andnot_si256(_mm256_cmpeq_epi8(b, tab), ctl), _mm256_cmpeq_epi8(b, del));
        unsigned m = static_cast<unsigned>(_mm256_movemask_epi8(bad));
        if (m)
            return p + __builtin_ctz(m);
        p += 32;
    }
    if (end - p >= 16) {
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        __m128i ctl = _mm_and_si128(_mm_cmpgt_epi8(_mm256_castsi256_si128(sp), b),
                                    _mm_cmpgt_epi8(b, _mm256_castsi256_si128(neg)));
        __m128i bad = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(b, _mm256_castsi256_si128(tab)), ctl),
                                   _mm_cmpeq_epi8(b, _mm256_castsi256_si128(del)));
        unsigned m = static_cast<unsigned>(_mm_movemask_epi8(bad));
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
    return value_scalar(p, end);
}

__attribute__((target("avx2"))) const char *target_avx2(const char *p, const char *end) {
    const __m256i lo = _mm256_set1_epi8(0x21), del = _mm256_set1_epi8(0x7F);
    while (end - p >= 32) {
        __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
        __m256i bad = _mm256_or_si256(_mm256_cmpgt_epi8(lo, b), _mm256_cmpeq_epi8(b, del));
        unsigned m = static_cast<unsigned>(_mm256_movemask_epi8(bad));
        if (m)
            return p + __builtin_ctz(m);
        p += 32;
    }
    if (end - p >= 16) {
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        __m128i bad = _mm_or_si128(_mm_cmpgt_epi8(_mm256_castsi256_si128(lo), b),
                                   _mm_cmpeq_epi8(b, _mm256_castsi256_si128(del)));
        unsigned m = static_cast<unsigned>(_mm_movemask_epi8(bad));
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
    return target_scalar(p, end);
}
#endif

struct ScanOps {
    int level;
    const char *(*value)(const char *, const char *);
    const char *(*target)(const char *, const char *);
};

const ScanOps kScalarOps{kScanScalar, value_scalar, target_scalar};
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

// Relaxed: the pointer only ever names one of three immutable tables, and a
// racing first use just picks the same one twice.
std::atomic<const ScanOps *> g_ops{nullptr};

inline const ScanOps *ops() {
    const ScanOps *o = g_ops.load(std::memory_order_relaxed);
    if (__builtin_expect(o == nullptr, 0)) {
        o = pick(kScanAuto);
        g_ops.store(o, std::memory_order_relaxed);
    }
    return o;
}

} // namespace

int scan_force(int level) {
    const ScanOps *o = pick(level);
    g_ops.store(o, std::memory_order_relaxed);
    return o->level;
}

int scan_level() { return ops()->level; }

const char *scan_value(const char *p, const char *end) { return ops()->value(p, end); }
const char *scan_target(const char *p, const char *end) { return ops()->target(p, end); }

} // namespace weir::http1
