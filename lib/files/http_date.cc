// HTTP-date formatting and parsing (http_date.h). The calendar arithmetic is
// Howard Hinnant's days_from_civil/civil_from_days: exact over the whole
// proleptic Gregorian range, without tables or libc.
#include "files/http_date.h"

#include <cstring>

namespace weir::files {
namespace {

constexpr const char *kDays[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char *kLongDays[7] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
constexpr const char *kMonths[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

constexpr int64_t kMinYear0 = -62167219200;  // 0000-01-01T00:00:00Z
constexpr int64_t kMaxYear9999 = 253402300799; // 9999-12-31T23:59:59Z

void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

bool leap(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

unsigned days_in_month(int64_t y, unsigned m) {
    static constexpr unsigned n[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : n[m - 1];
}

void put2(char *p, unsigned v) {
    p[0] = static_cast<char>('0' + v / 10 % 10);
    p[1] = static_cast<char>('0' + v % 10);
}

// A cursor over the field value: each take_* consumes on success only as
// far as the callers need (a failure fails the whole parse).
struct Cur {
    std::string_view s;
    size_t i = 0;
    bool lit(std::string_view w) {
        if (s.substr(i, w.size()) != w)
            return false;
        i += w.size();
        return true;
    }
    bool digits(size_t n, unsigned *v) {
        if (s.size() - i < n)
            return false;
        unsigned x = 0;
        for (size_t k = 0; k < n; k++) {
            char c = s[i + k];
            if (c < '0' || c > '9')
                return false;
            x = x * 10 + static_cast<unsigned>(c - '0');
        }
        *v = x;
        i += n;
        return true;
    }
    bool month(unsigned *m) {
        for (unsigned k = 0; k < 12; k++)
            if (lit(kMonths[k])) {
                *m = k + 1;
                return true;
            }
        return false;
    }
    bool day_name(const char *const *names) {
        for (unsigned k = 0; k < 7; k++)
            if (lit(names[k]))
                return true;
        return false;
    }
    // time-of-day = hour ":" minute ":" second
    bool time(unsigned *h, unsigned *mi, unsigned *se) {
        return digits(2, h) && lit(":") && digits(2, mi) && lit(":") && digits(2, se);
    }
    bool end() const { return i == s.size(); }
};

bool assemble(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi, unsigned se, int64_t *out) {
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 60)
        return false;
    if (se == 60)
        se = 59; // a leap second: the grammar allows it, POSIX time has no place for it
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return true;
}

// IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
bool parse_imf(std::string_view s, int64_t *out) {
    Cur c{s};
    unsigned d, mo, y, h, mi, se;
    return c.day_name(kDays) && c.lit(", ") && c.digits(2, &d) && c.lit(" ") && c.month(&mo) && c.lit(" ") &&
           c.digits(4, &y) && c.lit(" ") && c.time(&h, &mi, &se) && c.lit(" GMT") && c.end() &&
           assemble(y, mo, d, h, mi, se, out);
}

// rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT"
bool parse_rfc850(std::string_view s, int64_t now, int64_t *out) {
    Cur c{s};
    unsigned d, mo, yy, h, mi, se;
    if (!(c.day_name(kLongDays) && c.lit(", ") && c.digits(2, &d) && c.lit("-") && c.month(&mo) && c.lit("-") &&
          c.digits(2, &yy) && c.lit(" ") && c.time(&h, &mi, &se) && c.lit(" GMT") && c.end()))
        return false;
    int64_t ny;
    unsigned nm, nd;
    civil_from_days((now >= 0 ? now : now - 86399) / 86400, &ny, &nm, &nd);
    // RFC 9110 5.6.7: a year more than 50 years in the future is the most
    // recent past year with the same last two digits; so the year is the
    // one with those digits in (now - 50, now + 50].
    int64_t y = ny - ny % 100 + yy;
    if (y > ny + 50)
        y -= 100;
    else if (y <= ny - 50)
        y += 100; // still not more than 50 years ahead: the nearer reading
    return assemble(y, mo, d, h, mi, se, out);
}

// asctime-date: "Sun Nov  6 08:49:37 1994" (day as 2DIGIT or SP DIGIT)
bool parse_asctime(std::string_view s, int64_t *out) {
    Cur c{s};
    unsigned d, mo, y, h, mi, se;
    if (!(c.day_name(kDays) && c.lit(" ") && c.month(&mo) && c.lit(" ")))
        return false;
    if (!(c.lit(" ") ? c.digits(1, &d) : c.digits(2, &d)))
        return false;
    return c.lit(" ") && c.time(&h, &mi, &se) && c.lit(" ") && c.digits(4, &y) && c.end() &&
           assemble(y, mo, d, h, mi, se, out);
}

} // namespace

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void format_imf_fixdate(int64_t t, char *out) {
    if (t < kMinYear0)
        t = kMinYear0;
    if (t > kMaxYear9999)
        t = kMaxYear9999;
    int64_t days = (t >= 0 ? t : t - 86399) / 86400;
    int64_t secs = t - days * 86400;
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    // 1970-01-01 was a Thursday (4).
    int64_t wd = (days % 7 + 7 + 4) % 7;
    std::memcpy(out, kDays[wd], 3);
    std::memcpy(out + 3, ", ", 2);
    put2(out + 5, d);
    out[7] = ' ';
    std::memcpy(out + 8, kMonths[m - 1], 3);
    out[11] = ' ';
    put2(out + 12, static_cast<unsigned>(y / 100));
    put2(out + 14, static_cast<unsigned>(y % 100));
    out[16] = ' ';
    put2(out + 17, static_cast<unsigned>(secs / 3600));
    out[19] = ':';
    put2(out + 20, static_cast<unsigned>(secs / 60 % 60));
    out[22] = ':';
    put2(out + 23, static_cast<unsigned>(secs % 60));
    std::memcpy(out + 25, " GMT", 4);
}

bool parse_http_date(std::string_view s, int64_t now, int64_t *out) {
    // The three forms part at the fourth byte: "Sun," (IMF), "Sun " (asctime),
    // "Sund" (RFC 850's long weekday).
    if (s.size() < 4)
        return false;
    if (s[3] == ',')
        return parse_imf(s, out);
    if (s[3] == ' ')
        return parse_asctime(s, out);
    return parse_rfc850(s, now, out);
}

} // namespace weir::files
