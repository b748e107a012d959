// The decision of a file answer (file_answer.h).
#include "files/file_answer.h"

#include "files/http_date.h"

namespace weir::files {
namespace {

bool name_is(const weir_header_t &h, std::string_view want) {
    if (h.name.len != want.size())
        return false;
    for (size_t i = 0; i < want.size(); i++) {
        char c = h.name.ptr[i];
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
        if (c != want[i])
            return false;
    }
    return true;
}

std::string_view view(const weir_str_t &s) { return {s.ptr ? s.ptr : "", s.len}; }

// The fields the decision reads, gathered in one pass.
struct Fields {
    const weir_header_t *if_match = nullptr, *if_none_match = nullptr;
    const weir_header_t *ims = nullptr, *ius = nullptr, *if_range = nullptr, *range = nullptr;
    unsigned n_ims = 0, n_ius = 0, n_if_range = 0, n_range = 0;
};

Fields gather(const weir_header_t *h, size_t n) {
    Fields f;
    for (size_t i = 0; i < n; i++) {
        const weir_header_t &x = h[i];
        if (x.name.len < 5 || (x.name.ptr[0] | 0x20) != (x.name.len == 5 ? 'r' : 'i'))
            continue; // every name read starts with i or is "range": most fields stop here
        if (name_is(x, "if-match"))
            f.if_match = f.if_match ? f.if_match : &x;
        else if (name_is(x, "if-none-match"))
            f.if_none_match = f.if_none_match ? f.if_none_match : &x;
        else if (name_is(x, "if-modified-since"))
            f.ims = f.n_ims++ ? f.ims : &x;
        else if (name_is(x, "if-unmodified-since"))
            f.ius = f.n_ius++ ? f.ius : &x;
        else if (name_is(x, "if-range"))
            f.if_range = f.n_if_range++ ? f.if_range : &x;
        else if (name_is(x, "range"))
            f.range = f.n_range++ ? f.range : &x;
    }
    return f;
}

// Every line of a list field, from its first, as one list.
ListMatch match_all(const weir_header_t *first, const weir_header_t *end, std::string_view name,
                    std::string_view etag, Compare how) {
    ListMatch m = ListMatch::NoMatch;
    bool seen = false;
    for (const weir_header_t *x = first; x < end; x++)
        if (name_is(*x, name)) {
            ListMatch one = match_etag_list(view(x->value), etag, how);
            m = seen ? match_combine(m, one) : one;
            seen = true;
        }
    return m;
}

// A single valid HTTP-date, or false (absent, twice, not a date).
bool one_date(const weir_header_t *h, unsigned count, int64_t now, int64_t *out) {
    return h && count == 1 && parse_http_date(view(h->value), now, out);
}

} // namespace

FileDecision decide_file(std::string_view method, const weir_header_t *headers, size_t num_headers,
                         const FileFacts &facts) {
    FileDecision d;
    d.etag_len = format_etag(facts.size, facts.mtime_sec, facts.mtime_nsec, d.etag);
    d.last_modified = facts.mtime_sec > facts.now ? facts.now : facts.mtime_sec;
    d.length = facts.size;
    d.head = method == "HEAD";
    if (!d.head && method != "GET") {
        d.status = 405;
        return d;
    }
    const std::string_view etag(d.etag, d.etag_len);
    const Fields f = gather(headers, num_headers);
    const weir_header_t *end = headers + num_headers;
    int64_t date;
    // 1, 2: the preconditions of a state the client relies on.
    if (f.if_match) {
        ListMatch m = match_all(f.if_match, end, "if-match", etag, Compare::Strong);
        if (m != ListMatch::Any && m != ListMatch::Match) {
            d.status = 412;
            return d;
        }
    } else if (one_date(f.ius, f.n_ius, facts.now, &date) && d.last_modified > date) {
        d.status = 412;
        return d;
    }
    // 3, 4: the client's cached copy is current.
    if (f.if_none_match) {
        ListMatch m = match_all(f.if_none_match, end, "if-none-match", etag, Compare::Weak);
        if (m == ListMatch::Any || m == ListMatch::Match) {
            d.status = 304;
            return d;
        }
    } else if (one_date(f.ims, f.n_ims, facts.now, &date) && d.last_modified <= date) {
        d.status = 304;
        return d;
    }
    // 5: a part of it.
    if (d.head || !facts.ranges || !f.range || f.n_range != 1)
        return d;
    if (f.if_range) {
        std::string_view v = view(f.if_range->value);
        bool holds = false;
        if (f.n_if_range == 1) {
            if (!v.empty() && (v[0] == '"' || v.substr(0, 2) == "W/"))
                holds = etag_strong_equal(v, etag);
            else
                holds = parse_http_date(v, facts.now, &date) && date == d.last_modified;
        }
        if (!holds)
            return d;
    }
    RangeResult r = parse_range(view(f.range->value), facts.size);
    switch (r.kind) {
    case RangeKind::Ignored:
        break;
    case RangeKind::Multiple:
        d.multiple_ranges = true;
        break;
    case RangeKind::Unsatisfiable:
        d.status = 416;
        d.length = 0;
        break;
    case RangeKind::Single:
        d.status = 206;
        d.offset = r.first;
        d.length = r.length;
        break;
    }
    return d;
}

} // namespace weir::files
