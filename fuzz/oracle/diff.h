// The differential fuzz target's oracle: weir's request parser against llhttp.
//
// Input: the raw bytes of a request (no control bytes). Both parsers read the
// first message (fuzz/oracle/diff_parse.h). A finding is
//   * one parser accepts the message and the other refuses it;
//   * one accepts the message complete while the other still waits for
//     bytes (they frame it differently);
//   * both accept and they differ in method, target, version, field lines
//     (names exactly, values with OWS trimmed), keep-alive, where the head
//     ends, where the message ends, the decoded body or the trailers;
// unless the disagreement falls in one of the classes listed in
// fuzz/oracle/diff_classes.h, each a deliberate strictness of weir (or one of
// llhttp's beyond what RFC 9112 asks) with its reference; docs/fuzzing.md
// lists them. A refusal against "needs more bytes" is not a finding: more
// bytes decide it, and the fuzzer tries them.
#pragma once
#include <string>

#include "diff_classes.h"
#include "diff_llhttp.h"

namespace diff_fuzz {

inline bool same_fields(const std::vector<Field> &w, const std::vector<Field> &l) {
    if (w.size() != l.size())
        return false;
    for (size_t i = 0; i < w.size(); i++)
        if (w[i].name != l[i].name || w[i].value != cls::trim(l[i].value))
            return false;
    return true;
}

// What differs between two accepted messages, or nullptr.
inline const char *differ(const Message &w, const Message &l) {
    if (w.method != l.method)
        return "method";
    if (w.target != l.target)
        return "target";
    if (w.major != l.major || w.minor != l.minor)
        return "version";
    if (!same_fields(w.fields, l.fields))
        return "field lines";
    if (w.head_end != l.head_end)
        return "end of the head";
    if (l.tunnel)
        return nullptr; // llhttp hands the rest to another protocol: no body to compare
    if (w.keep_alive != l.keep_alive)
        return "keep-alive";
    if (w.chunked != l.chunked)
        return "framing (chunked or not)";
    if (w.msg_end != l.msg_end)
        return "end of the message";
    if (w.body != l.body)
        return "decoded body";
    if (!same_fields(w.trailers, l.trailers))
        return "trailer fields";
    return nullptr;
}

// The disagreement between the two, or nullptr when they agree.
inline const char *disagreement(const Message &w, const Message &l) {
    using V = Verdict;
    if (w.verdict == V::Accept && l.verdict == V::Accept)
        return differ(w, l);
    if (w.verdict == V::Accept && l.verdict == V::Refuse)
        return "weir accepts, llhttp refuses";
    if (w.verdict == V::Refuse && l.verdict == V::Accept)
        return "weir refuses, llhttp accepts";
    if (w.verdict == V::Accept && l.verdict == V::Incomplete)
        return "weir accepts a complete message, llhttp waits for more";
    if (w.verdict == V::Incomplete && l.verdict == V::Accept)
        return "llhttp accepts a complete message, weir waits for more";
    return nullptr;
}

struct Outcome {
    Message w, l;
    const char *what = nullptr;      // the disagreement, or nullptr
    const StrictClass *cls = nullptr; // the class that explains it, or nullptr
};

inline Outcome compare(const uint8_t *data, size_t size) {
    Outcome o;
    const char *in = reinterpret_cast<const char *>(data);
    o.w = weir_side(in, size);
    o.l = llhttp_side(in, size);
    o.what = disagreement(o.w, o.l);
    if (o.what)
        o.cls = classify(std::string(in, size), o.w, o.l);
    return o;
}

// nullptr when the parsers agree or their disagreement is a listed class.
inline const char *one(const uint8_t *data, size_t size) {
    Outcome o = compare(data, size);
    return o.what && !o.cls ? o.what : nullptr;
}

} // namespace diff_fuzz
