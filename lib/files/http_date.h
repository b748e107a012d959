// HTTP-date (RFC 9110 5.6.7): formatting as IMF-fixdate and parsing the three
// forms a recipient must accept. Pure: no clock, no locale, no libc time
// calls (gmtime and strptime read the locale and the TZ environment), so the
// same bytes give the same answer on every host and in the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weir::files {

// "Sun, 06 Nov 1994 08:49:37 GMT": always 29 bytes.
inline constexpr size_t kImfFixdateLen = 29;

// Writes t (seconds since the epoch, UTC) as an IMF-fixdate into out (at
// least kImfFixdateLen bytes, not NUL-terminated). Years 0..9999 only (the
// grammar's four digits): t outside them is clamped to the nearest end.
void format_imf_fixdate(int64_t t, char *out);

// Parses an HTTP-date: IMF-fixdate, the obsolete RFC 850 form ("Sunday,
// 06-Nov-94 08:49:37 GMT") and asctime's ("Sun Nov  6 08:49:37 1994"), as
// RFC 9110 5.6.7 says recipients MUST. The whole of s must be the date (no
// list, no trailing bytes); names and "GMT" are case-sensitive, as the
// grammar is; the weekday must be a weekday's name but is not checked
// against the date (it is redundant). now (seconds since the epoch) places
// RFC 850's two-digit year: a year more than 50 years in the future is the
// most recent past year with those two digits. A leap second (:60) reads as
// :59. Returns false for anything else.
bool parse_http_date(std::string_view s, int64_t now, int64_t *out);

// Days since 1970-01-01 of a proleptic Gregorian date (month 1..12).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d);

} // namespace weir::files
