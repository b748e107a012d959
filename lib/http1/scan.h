// Vector scans for the two long runs of a request head: the request-target and
// field values. Each returns the first byte in [p, end) outside its class (or
// end), reading nothing outside [p, end) so input may end at a guard page.
//
// The implementation is picked once at run time (AVX2, else SSE4.2, else
// scalar) so the default build stays portable; scan_force() lets tests and the
// benchmark pin one, to compare the vector paths with the scalar one.
#pragma once

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

} // namespace weir::http1
