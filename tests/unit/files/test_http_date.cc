// HTTP-date (lib/files/http_date.cc): IMF-fixdate out; IMF-fixdate, RFC 850
// and asctime in (RFC 9110 5.6.7), and what is not a date.
#include <string>

#include "cmocka_cxx.h"
#include "files/http_date.h"

using namespace weir::files;

namespace {

constexpr int64_t k1994 = 784111777; // Sun, 06 Nov 1994 08:49:37 GMT
constexpr int64_t kNow2026 = 1796400000; // 2026-12-04

std::string fmt(int64_t t) {
    char b[kImfFixdateLen];
    format_imf_fixdate(t, b);
    return std::string(b, sizeof b);
}

int64_t parse(const char *s, int64_t now = kNow2026) {
    int64_t t = -1;
    assert_true(parse_http_date(s, now, &t));
    return t;
}

bool bad(const char *s) {
    int64_t t;
    return !parse_http_date(s, kNow2026, &t);
}

void test_http_date_format(void **) {
    assert_string_equal(fmt(k1994).c_str(), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_string_equal(fmt(0).c_str(), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_string_equal(fmt(-1).c_str(), "Wed, 31 Dec 1969 23:59:59 GMT");
    assert_string_equal(fmt(951782400).c_str(), "Tue, 29 Feb 2000 00:00:00 GMT");
    assert_string_equal(fmt(4102444799).c_str(), "Thu, 31 Dec 2099 23:59:59 GMT");
    // Outside four-digit years: clamped.
    assert_string_equal(fmt(INT64_MAX).c_str(), "Fri, 31 Dec 9999 23:59:59 GMT");
    assert_string_equal(fmt(INT64_MIN).c_str(), "Sat, 01 Jan 0000 00:00:00 GMT");
    // Every day of a few years survives a round trip.
    for (int64_t t = 1600000000; t < 1600000000 + 3 * 366 * 86400; t += 86400 + 3601)
        assert_int_equal(parse(fmt(t).c_str()), t);
}

void test_http_date_three_forms(void **) {
    assert_int_equal(parse("Sun, 06 Nov 1994 08:49:37 GMT"), k1994);
    assert_int_equal(parse("Sunday, 06-Nov-94 08:49:37 GMT"), k1994);
    assert_int_equal(parse("Sun Nov  6 08:49:37 1994"), k1994);
    assert_int_equal(parse("Sun Nov 06 08:49:37 1994"), k1994);
    // The weekday is redundant: a wrong one is not checked.
    assert_int_equal(parse("Mon, 06 Nov 1994 08:49:37 GMT"), k1994);
    // A leap second reads as :59.
    assert_int_equal(parse("Sat, 31 Dec 2016 23:59:60 GMT"), parse("Sat, 31 Dec 2016 23:59:59 GMT"));
}

// RFC 850's two-digit year: more than 50 years ahead is the past century.
void test_http_date_rfc850_years(void **) {
    assert_int_equal(parse("Sunday, 06-Nov-94 08:49:37 GMT"), k1994);          // 2094 > 2076: 1994
    assert_int_equal(parse("Thursday, 01-Jan-70 00:00:00 GMT", kNow2026), days_from_civil(2070, 1, 1) * 86400);
    assert_int_equal(parse("Monday, 01-Jan-76 00:00:00 GMT", kNow2026), days_from_civil(2076, 1, 1) * 86400);
    assert_int_equal(parse("Monday, 01-Jan-77 00:00:00 GMT", kNow2026), days_from_civil(1977, 1, 1) * 86400);
    assert_int_equal(parse("Friday, 01-Jan-26 00:00:00 GMT", kNow2026), days_from_civil(2026, 1, 1) * 86400);
    // In 2090, "10" is 2110 (20 years ahead), not 2010 (80 back).
    int64_t in2090 = days_from_civil(2090, 6, 1) * 86400;
    assert_int_equal(parse("Wednesday, 01-Jan-10 00:00:00 GMT", in2090), days_from_civil(2110, 1, 1) * 86400);
}

void test_http_date_rejects(void **) {
    for (const char *s : {
             "", "Sun", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC",
             "Sun, 06 Nov 1994 08:49:37 gmt", "sun, 06 Nov 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
             "Sun, 06 nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun,  06 Nov 1994 08:49:37 GMT",
             "Sun, 06 Nov 1994 08:49:37 GMT ", " Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
             "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT",
             "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT",
             "Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
             "Sun, 06 Xyz 1994 08:49:37 GMT", "Sun, 06 Nov 199x 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
             "Sunday, 06 Nov 94 08:49:37 GMT", "Sun Nov 6 08:49:37 1994", "Sun Nov  6 08:49:37 94",
             "Sun Nov  6 08:49:37 1994 GMT", "Sunny, 06-Nov-94 08:49:37 GMT", "1994-11-06T08:49:37Z",
             "784111777"}) {
        if (!bad(s))
            fail_msg("accepted \"%s\"", s);
    }
    int64_t t;
    assert_false(parse_http_date(std::string_view("Sun, 06 Nov 1994 08:49:37 GMT\0", 30), kNow2026, &t));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_date_format),
        cmocka_unit_test(test_http_date_three_forms),
        cmocka_unit_test(test_http_date_rfc850_years),
        cmocka_unit_test(test_http_date_rejects),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
