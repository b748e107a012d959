// Helpers of the differential oracle's class list (diff_classes.h): token
// and list readers over what a parser reported, where an input's lines and
// trailers start, and the one-step re-check the HTAB classes use. Apart so
// the list itself reads as a list.
#pragma once
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "diff_llhttp.h"
#include "diff_weir.h"
#include "weir.h"

namespace diff_fuzz {

struct StrictClass;
// The first listed class the disagreement falls in, or nullptr (below).
inline const StrictClass *classify(const std::string &in, const Message &w, const Message &l);
// The disagreement between the two parsers, or nullptr (fuzz/oracle/diff.h).
inline const char *disagreement(const Message &w, const Message &l);

namespace cls {

inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
inline bool ieq(const std::string &a, const char *b) {
    const size_t n = strlen(b);
    if (a.size() != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(a[i]) != b[i])
            return false;
    return true;
}
inline bool tchar(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}
inline bool token(const std::string &s) {
    if (s.empty())
        return false;
    for (unsigned char c : s)
        if (!tchar(c))
            return false;
    return true;
}
inline std::string trim(const std::string &s) {
    size_t a = 0, b = s.size();
    while (a < b && (s[a] == ' ' || s[a] == '\t'))
        a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
        b--;
    return s.substr(a, b - a);
}
inline size_t count(const std::vector<Field> &fs, const char *name) {
    size_t n = 0;
    for (const Field &f : fs)
        n += ieq(f.name, name);
    return n;
}
// Every comma-separated element of every field called name, OWS trimmed,
// empty ones included.
inline std::vector<std::string> elements(const std::vector<Field> &fs, const char *name) {
    std::vector<std::string> out;
    for (const Field &f : fs) {
        if (!ieq(f.name, name))
            continue;
        size_t p = 0;
        for (;;) {
            size_t e = f.value.find(',', p);
            out.push_back(trim(f.value.substr(p, e == std::string::npos ? std::string::npos : e - p)));
            if (e == std::string::npos)
                break;
            p = e + 1;
        }
    }
    return out;
}
// The bytes after the empty lines before the request line.
inline size_t line_start(const std::string &in) {
    size_t s = 0;
    while (in.compare(s, 2, "\r\n") == 0)
        s += 2;
    return s;
}
// The input's request line is exactly what llhttp reported, in the syntax
// RFC 9112 3 gives: method SP request-target SP HTTP-version CRLF.
inline bool canonical_line(const std::string &in, const Message &l) {
    std::string want = l.method + " " + l.target + " HTTP/" + std::to_string(l.major) + "." +
                       std::to_string(l.minor) + "\r\n";
    return in.compare(line_start(in), want.size(), want) == 0;
}
// The head as llhttp delimited it (the whole input when it did not say).
inline std::string head(const std::string &in, const Message &m) {
    return in.substr(0, m.head_end ? m.head_end : in.size());
}
inline bool has_bare_lf(const std::string &s) {
    for (size_t i = 0; i < s.size(); i++)
        if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
            return true;
    return false;
}
inline bool has_bare_cr(const std::string &s) {
    for (size_t i = 0; i < s.size(); i++)
        if (s[i] == '\r' && (i + 1 == s.size() || s[i + 1] != '\n'))
            return true;
    return false;
}

// The chunk-size lines of a chunked body that one side accepted
// (m.head_end to m.msg_end): where the digits start, where they end (the
// extensions start), where the CR is.
struct ChunkLine {
    size_t digits, ext, cr;
};
inline std::vector<ChunkLine> chunk_lines(const std::string &in, const Message &m) {
    std::vector<ChunkLine> out;
    size_t p = m.head_end;
    while (p < m.msg_end) {
        const size_t d = p;
        uint64_t size = 0;
        for (; p < in.size() && isxdigit(static_cast<unsigned char>(in[p])); p++) {
            const char c = lower(in[p]);
            size = size * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
        }
        size_t e = in.find('\r', p);
        if (e == std::string::npos || e >= m.msg_end)
            break;
        out.push_back({d, p, e});
        if (size == 0)
            break; // the trailer section follows
        p = e + 2 + size + 2;
    }
    return out;
}
// Where the last chunk's line ends (the trailer section starts there).
inline size_t trailers_start(const std::string &in, const Message &m) {
    auto lines = chunk_lines(in, m);
    return lines.empty() ? m.msg_end : lines.back().cr + 2;
}
// An extension element with no name (";;", "; =x", a ';' at the end).
inline bool empty_ext_name(const std::string &in, const ChunkLine &c) {
    for (size_t i = c.ext; i < c.cr; i++) {
        if (in[i] != ';')
            continue;
        size_t j = i + 1;
        while (j < c.cr && (in[j] == ' ' || in[j] == '\t'))
            j++;
        if (j == c.cr || !tchar(static_cast<unsigned char>(in[j])))
            return true;
    }
    return false;
}
inline std::string htab_to_sp(std::string s) {
    for (char &c : s)
        if (c == '\t')
            c = ' ';
    return s;
}

// For the HTAB classes: with every HTAB made an SP, llhttp accepts the
// input, or refuses it for a reason that is itself a listed class (one input
// can combine two deliberate strictnesses, as "chunked\t" and ";a=b;c").
// Not recursive past one step: the SP version has no HTAB left.
inline bool sp_version_explained(const std::string &in) {
    const std::string sp = htab_to_sp(in);
    if (sp == in)
        return false;
    Message l2 = llhttp_side(sp.data(), sp.size());
    if (l2.verdict == Verdict::Accept)
        return true;
    Message w2 = weir_side(sp.data(), sp.size());
    return w2.verdict == Verdict::Accept && classify(sp, w2, l2) != nullptr;
}

inline bool llhttp_method(const std::string &m) {
    static const char *const kMethods[] = {
#define XX(num, name, string) #string,
        HTTP_METHOD_MAP(XX)
#undef XX
    };
    for (const char *k : kMethods)
        if (m == k)
            return true;
    return false;
}

inline bool refuse_accept(const Message &w, const Message &l, int code) {
    return w.verdict == Verdict::Refuse && l.verdict == Verdict::Accept && w.code == code;
}
inline bool accept_refuse(const Message &w, const Message &l) {
    return w.verdict == Verdict::Accept && l.verdict == Verdict::Refuse;
}

} // namespace cls

} // namespace diff_fuzz
