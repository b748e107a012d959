// Entity tags and byte ranges (validators.h).
#include "files/validators.h"

namespace weir::files {
namespace {

bool ows(char c) { return c == ' ' || c == '\t'; }

// etagc = %x21 / %x23-7E / obs-text
bool etagc(unsigned char c) { return c == 0x21 || (c >= 0x23 && c <= 0x7E) || c >= 0x80; }

// Reads one entity-tag at s[i]: sets weak and opaque (quotes included) and
// moves i past it; false when s[i] does not start one.
bool take_etag(std::string_view s, size_t &i, bool *weak, std::string_view *opaque) {
    *weak = false;
    if (s.substr(i, 2) == "W/") {
        *weak = true;
        i += 2;
    }
    if (i >= s.size() || s[i] != '"')
        return false;
    size_t j = i + 1;
    while (j < s.size() && etagc(static_cast<unsigned char>(s[j])))
        j++;
    if (j >= s.size() || s[j] != '"')
        return false;
    *opaque = s.substr(i, j + 1 - i);
    i = j + 1;
    return true;
}

// Saturating decimal: 1*DIGIT at s[i]; false when there is no digit.
bool take_u64(std::string_view s, size_t &i, uint64_t *v) {
    size_t start = i;
    uint64_t x = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; i++) {
        uint64_t d = static_cast<uint64_t>(s[i] - '0');
        x = x > (UINT64_MAX - d) / 10 ? UINT64_MAX : x * 10 + d;
    }
    *v = x;
    return i > start;
}

bool ieq_bytes(std::string_view a, std::string_view b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z')
            x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = static_cast<char>(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return true;
}

} // namespace

size_t format_etag(uint64_t size, int64_t mtime_sec, uint32_t mtime_nsec, char *out) {
    static constexpr char hex[] = "0123456789abcdef";
    size_t n = 0;
    auto put = [&](uint64_t v) {
        char tmp[16];
        size_t k = 0;
        do {
            tmp[k++] = hex[v & 15];
            v >>= 4;
        } while (v);
        while (k)
            out[n++] = tmp[--k];
    };
    out[n++] = '"';
    put(static_cast<uint64_t>(mtime_sec)); // before 1970: the two's complement, still one value per time
    out[n++] = '.';
    put(mtime_nsec);
    out[n++] = '-';
    put(size);
    out[n++] = '"';
    return n;
}

ListMatch match_etag_list(std::string_view s, std::string_view etag, Compare how) {
    std::string_view ours = etag; // strong: no W/
    size_t i = 0;
    bool matched = false, any = false, members = false;
    // #rule (RFC 9110 5.6.1): empty members and OWS around commas are allowed.
    while (i < s.size()) {
        while (i < s.size() && (ows(s[i]) || s[i] == ','))
            i++;
        if (i >= s.size())
            break;
        members = true;
        if (s[i] == '*') {
            any = true;
            i++;
        } else {
            bool weak;
            std::string_view opaque;
            if (!take_etag(s, i, &weak, &opaque))
                return ListMatch::Malformed;
            if (opaque == ours && (how == Compare::Weak || !weak))
                matched = true;
        }
        while (i < s.size() && ows(s[i]))
            i++;
        if (i < s.size() && s[i] != ',')
            return ListMatch::Malformed;
    }
    if (!members)
        return ListMatch::Malformed; // an empty field is not `1#entity-tag`
    if (any)
        return ListMatch::Any;
    return matched ? ListMatch::Match : ListMatch::NoMatch;
}

ListMatch match_combine(ListMatch a, ListMatch b) {
    // Malformed wins (the caller must see it), then Any, then Match.
    if (a == ListMatch::Malformed || b == ListMatch::Malformed)
        return ListMatch::Malformed;
    if (a == ListMatch::Any || b == ListMatch::Any)
        return ListMatch::Any;
    if (a == ListMatch::Match || b == ListMatch::Match)
        return ListMatch::Match;
    return ListMatch::NoMatch;
}

bool etag_strong_equal(std::string_view v, std::string_view etag) {
    size_t i = 0;
    bool weak;
    std::string_view opaque;
    return take_etag(v, i, &weak, &opaque) && i == v.size() && !weak && opaque == etag;
}

RangeResult parse_range(std::string_view s, uint64_t size) {
    RangeResult r;
    size_t eq = s.find('=');
    // range-unit is a token compared case-insensitively (RFC 9110 14.1).
    if (eq == std::string_view::npos || !ieq_bytes(s.substr(0, eq), "bytes"))
        return r;
    size_t i = eq + 1;
    unsigned satisfiable = 0, specs = 0;
    while (i < s.size()) {
        while (i < s.size() && (ows(s[i]) || s[i] == ','))
            i++;
        if (i >= s.size())
            break;
        specs++;
        uint64_t first = 0, last = UINT64_MAX, suffix = 0;
        bool is_suffix = false;
        if (s[i] == '-') {
            i++;
            if (!take_u64(s, i, &suffix))
                return RangeResult{};
            is_suffix = true;
        } else {
            if (!take_u64(s, i, &first) || i >= s.size() || s[i] != '-')
                return RangeResult{};
            i++;
            if (i < s.size() && s[i] >= '0' && s[i] <= '9') {
                take_u64(s, i, &last);
                if (last < first)
                    return RangeResult{}; // an invalid byte-range-spec invalidates the field (14.1.1)
            }
        }
        while (i < s.size() && ows(s[i]))
            i++;
        if (i < s.size() && s[i] != ',')
            return RangeResult{};
        // Satisfiable (14.1.2): an int-range whose first-pos is inside the
        // file; a suffix-range of non-zero length on a non-empty file.
        uint64_t f, len;
        if (is_suffix) {
            if (suffix == 0 || size == 0)
                continue;
            len = suffix < size ? suffix : size;
            f = size - len;
        } else {
            if (first >= size)
                continue;
            f = first;
            len = (last >= size - 1 ? size - 1 : last) - first + 1;
        }
        if (++satisfiable == 1) {
            r.first = f;
            r.length = len;
        }
    }
    if (specs == 0)
        return RangeResult{}; // "bytes=" alone: not a range-set
    r.kind = satisfiable == 0 ? RangeKind::Unsatisfiable
             : satisfiable == 1 ? RangeKind::Single
                                : RangeKind::Multiple;
    if (r.kind != RangeKind::Single)
        r.first = r.length = 0;
    return r;
}

} // namespace weir::files
