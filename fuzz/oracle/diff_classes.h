// The disagreements between weir and llhttp that the differential oracle
// (fuzz/oracle/diff.h) accepts as expected: each a deliberate strictness of
// weir, or a strictness of llhttp's that RFC 9110/9112 does not ask for,
// with its reference. docs/fuzzing.md lists them with what the fuzzer found.
//
// Each class is keyed on what the two said (weir's code, llhttp's errno) and
// checks the input for the reason it names, mostly on the side that
// accepted (its fields say what was there) or at the byte llhttp refused;
// a disagreement that no class explains is a finding.
#pragma once
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "diff_class_helpers.h"
#include "diff_llhttp.h"
#include "diff_weir.h"
#include "weir.h"

namespace diff_fuzz {

struct StrictClass {
    const char *id;
    const char *rule; // what the stricter side does
    const char *ref;  // where the RFCs allow it
    bool (*match)(const std::string &in, const Message &w, const Message &l);
};

// The list. Weir refuses, llhttp accepts: weir is stricter (never a
// smuggling risk for weir: it answers 4xx/5xx and closes). Weir accepts,
// llhttp refuses: each case below was checked against the RFC text.
inline const std::vector<StrictClass> &classes() {
    using namespace cls;
    static const std::vector<StrictClass> k = {
        // ---- weir stricter
        {"request-line-syntax",
         "weir refuses a request line that is not exactly method SP target SP HTTP-version CRLF "
         "(HTTP/0.9 lines without a version, two SPs, a bare LF ending the line)",
         "RFC 9112 3 (request-line grammar; recipients SHOULD NOT autocorrect), 2.2",
         [](const std::string &in, const Message &w, const Message &l) {
             return w.verdict == Verdict::Refuse && l.verdict == Verdict::Accept &&
                    (w.code == WEIR_E_BAD_REQUEST_LINE || w.code == WEIR_E_BAD_VERSION ||
                     w.code == WEIR_E_BAD_LINE_ENDING || w.code == WEIR_E_BAD_TARGET ||
                     w.code == WEIR_E_BAD_METHOD) &&
                    !canonical_line(in, l);
         }},
        {"leading-empty-lines", "weir skips at most 4 empty lines before the request line",
         "RFC 9112 2.2 (SHOULD ignore at least one)",
         [](const std::string &in, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_BAD_REQUEST_LINE) && line_start(in) > 8;
         }},
        {"bare-lf", "weir refuses a bare LF as a line end in the head",
         "RFC 9112 2.2 (a recipient MAY take LF alone as a line end)",
         [](const std::string &in, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_BAD_LINE_ENDING) && has_bare_lf(head(in, l));
         }},
        {"obs-fold", "weir refuses obs-fold (a field line starting with SP or HTAB), in trailers too",
         "RFC 9112 5.2 (a server MUST reject it or replace it with SP)",
         [](const std::string &in, const Message &w, const Message &l) {
             const std::string h = in.substr(0, l.msg_end);
             return refuse_accept(w, l, WEIR_E_OBS_FOLD) &&
                    (h.find("\n ") != std::string::npos || h.find("\n\t") != std::string::npos);
         }},
        {"host-missing", "weir refuses an HTTP/1.1 request without Host", "RFC 9112 3.2 (MUST 400)",
         [](const std::string &, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_MISSING_HOST) && l.minor == 1 && count(l.fields, "host") == 0;
         }},
        {"host-duplicate", "weir refuses two or more Host fields", "RFC 9112 3.2 (MUST 400)",
         [](const std::string &, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_DUPLICATE_HOST) && count(l.fields, "host") >= 2;
         }},
        {"host-invalid", "weir refuses a Host that is not uri-host [\":\" port]",
         "RFC 9112 3.2 (MUST 400 for an invalid field value), RFC 9110 7.2",
         [](const std::string &, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_BAD_HOST) && count(l.fields, "host") == 1;
         }},
        {"expect-unknown", "weir answers 417 to an expectation other than 100-continue",
         "RFC 9110 10.1.1 (MAY 417)",
         [](const std::string &, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_EXPECTATION_FAILED))
                 return false;
             for (const std::string &e : elements(l.fields, "expect"))
                 if (!e.empty() && !ieq(e, "100-continue"))
                     return true;
             return false;
         }},
        {"version-unsupported", "weir answers 505 to versions other than 1.0 and 1.1",
         "RFC 9110 15.6.6, RFC 9112 2.3",
         [](const std::string &, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_VERSION_UNSUPPORTED) && !(l.major == 1 && l.minor <= 1);
         }},
        {"target-form",
         "weir takes origin-form, absolute-form (http/https, a valid authority, no userinfo), "
         "authority-form for CONNECT only and * for OPTIONS only",
         "RFC 9112 3.2, 3.2.3, 3.2.4; RFC 9110 4.2.4 (userinfo: treat as an error)",
         [](const std::string &in, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_BAD_TARGET) && canonical_line(in, l);
         }},
        {"field-name-token", "weir refuses a field name that is not a token (an empty one), in trailers too",
         "RFC 9110 5.1 (field-name = token)",
         [](const std::string &, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_BAD_HEADER_NAME))
                 return false;
             for (const std::vector<Field> *fs : {&l.fields, &l.trailers})
                 for (const Field &f : *fs)
                     if (!token(f.name))
                         return true;
             return false;
         }},
        {"te-empty", "weir refuses a Transfer-Encoding field with no coding in it (llhttp reads no body)",
         "RFC 9112 6.3 item 4 (chunked not final: MUST 400)",
         [](const std::string &, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_BAD_TRANSFER_ENCODING) || count(l.fields, "transfer-encoding") == 0)
                 return false;
             for (const std::string &e : elements(l.fields, "transfer-encoding"))
                 if (!e.empty())
                     return false;
             return true;
         }},
        {"te-empty-beside-cl",
         "weir refuses a request with both Transfer-Encoding and Content-Length even when the "
         "Transfer-Encoding field names no coding (llhttp then frames the body by Content-Length)",
         "RFC 9112 6.1 (a server MAY reject a request with both), 6.3 item 3 (Transfer-Encoding overrides)",
         [](const std::string &, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_CL_AND_TE) || count(l.fields, "transfer-encoding") == 0 ||
                 count(l.fields, "content-length") == 0)
                 return false;
             for (const std::string &e : elements(l.fields, "transfer-encoding"))
                 if (!e.empty())
                     return false;
             return true;
         }},
        {"chunked-bare-lf", "weir refuses a bare LF ending a line of a chunked body",
         "RFC 9112 7.1 (chunked lines end in CRLF; RFC errata 7633 rejected allowing LF)",
         [](const std::string &in, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_BAD_LINE_ENDING) && w.in_body && l.chunked &&
                    has_bare_lf(in.substr(l.head_end, l.msg_end - l.head_end));
         }},
        {"chunk-size-digits", "weir takes at most 16 hex digits of chunk-size, leading zeros included",
         "RFC 9112 7.1 (recipients MUST anticipate large numerals and prevent overflow)",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_BAD_CHUNK) || !l.chunked)
                 return false;
             for (const ChunkLine &c : chunk_lines(in, l))
                 if (c.ext - c.digits > 16)
                     return true;
             return false;
         }},
        {"chunk-ext-name", "weir refuses a chunk extension without a name (\";;\", \"; =v\")",
         "RFC 9112 7.1.1 (chunk-ext-name = token)",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_BAD_CHUNK) || !l.chunked)
                 return false;
             for (const ChunkLine &c : chunk_lines(in, l))
                 if (empty_ext_name(in, c))
                     return true;
             return false;
         }},
        {"chunk-ext-token-quoted",
         "weir refuses a chunk-ext-val that is a token run into a quoted-string (\";a=b\"c\"\"), which llhttp "
         "takes as one value",
         "RFC 9112 7.1.1 (chunk-ext-val = token / quoted-string: one or the other)",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_BAD_CHUNK) || !l.chunked)
                 return false;
             for (const ChunkLine &c : chunk_lines(in, l))
                 for (size_t i = c.ext; i + 2 < c.cr; i++) {
                     if (in[i] != '=')
                         continue;
                     size_t j = i + 1;
                     while (j < c.cr && (in[j] == ' ' || in[j] == '\t'))
                         j++;
                     const size_t tok = j;
                     while (j < c.cr && tchar(static_cast<unsigned char>(in[j])))
                         j++;
                     if (j > tok && j < c.cr && in[j] == '"')
                         return true;
                 }
             return false;
         }},
        {"chunk-ext-ctl",
         "weir refuses a control character (DEL, or a CTL other than HTAB) in a chunk extension; llhttp "
         "takes one inside a quoted-string",
         "RFC 9110 5.6.4 (qdtext and quoted-pair exclude CTLs and DEL), RFC 9112 7.1.1",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_BAD_CHUNK) || !l.chunked)
                 return false;
             for (const ChunkLine &c : chunk_lines(in, l))
                 for (size_t i = c.ext; i < c.cr; i++) {
                     const unsigned char b = static_cast<unsigned char>(in[i]);
                     if (b == 0x7f || (b < 0x20 && b != '\t'))
                         return true;
                 }
             return false;
         }},
        {"te-in-http10", "weir refuses Transfer-Encoding in an HTTP/1.0 request",
         "RFC 9112 6.1 (MUST treat the framing as faulty)",
         [](const std::string &, const Message &w, const Message &l) {
             return refuse_accept(w, l, WEIR_E_BAD_TRANSFER_ENCODING) && l.minor == 0 &&
                    count(l.fields, "transfer-encoding") > 0;
         }},
        {"te-syntax",
         "weir refuses a Transfer-Encoding whose elements are not tokens (with parameters), "
         "or that names chunked twice",
         "RFC 9112 6.1, 6.3 item 4 (chunked once, last); RFC 9110 10.1.4",
         [](const std::string &, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_BAD_TRANSFER_ENCODING) || l.minor != 1)
                 return false;
             int chunked = 0;
             for (const std::string &e : elements(l.fields, "transfer-encoding")) {
                 if (!e.empty() && !token(e))
                     return true;
                 chunked += ieq(e, "chunked");
             }
             return chunked > 1;
         }},
        {"te-unknown-coding", "weir answers 501 to a transfer coding other than chunked (gzip, chunked)",
         "RFC 9112 6.1 (SHOULD 501)",
         [](const std::string &, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_UNKNOWN_TRANSFER_CODING))
                 return false;
             for (const std::string &e : elements(l.fields, "transfer-encoding"))
                 if (!e.empty() && !ieq(e, "chunked"))
                     return true;
             return false;
         }},

        {"chunk-ext-value", "weir refuses a chunk extension with '=' and no value (\";a=\")",
         "RFC 9112 7.1.1 (chunk-ext-val = token / quoted-string)",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!refuse_accept(w, l, WEIR_E_BAD_CHUNK) || !l.chunked)
                 return false;
             for (const ChunkLine &c : chunk_lines(in, l))
                 for (size_t i = c.ext; i < c.cr; i++) {
                     if (in[i] != '=')
                         continue;
                     size_t j = i + 1;
                     while (j < c.cr && (in[j] == ' ' || in[j] == '\t'))
                         j++;
                     if (j == c.cr || in[j] == ';')
                         return true;
                 }
             return false;
         }},
        {"connect-tunnel",
         "after a CONNECT head llhttp hands the rest to a tunnel; weir, which carries no tunnel, reads a "
         "body framed by Content-Length or chunked and then closes (it never keeps a CONNECT's connection)",
         "RFC 9110 9.3.6 (CONNECT content has no defined meaning; what follows is tunnel data)",
         [](const std::string &, const Message &w, const Message &l) {
             return l.verdict == Verdict::Accept && l.tunnel && l.method == "CONNECT" && w.in_body &&
                    w.head_end == l.head_end && !w.keep_alive && w.verdict != Verdict::Accept;
         }},
        {"connect-framing",
         "weir judges a CONNECT's Transfer-Encoding and Content-Length as any request's (400/501); llhttp "
         "tunnels a CONNECT before it looks at them",
         "RFC 9112 6.1, 6.3 (the framing rules name no exception for CONNECT)",
         [](const std::string &, const Message &w, const Message &l) {
             return w.verdict == Verdict::Refuse && l.verdict == Verdict::Accept && l.tunnel &&
                    l.method == "CONNECT" && !w.in_body &&
                    (w.code == WEIR_E_BAD_TRANSFER_ENCODING || w.code == WEIR_E_UNKNOWN_TRANSFER_CODING ||
                     w.code == WEIR_E_BAD_CONTENT_LENGTH || w.code == WEIR_E_CL_AND_TE) &&
                    (count(l.fields, "transfer-encoding") + count(l.fields, "content-length")) > 0;
         }},
        {"upgrade-framing",
         "weir judges an Upgrade request's Transfer-Encoding and Content-Length as any request's (400/501); "
         "llhttp hands an upgrade over before it looks at them",
         "RFC 9112 6.1, 6.3 (the framing rules name no exception for an upgrade; RFC 9110 7.8 switches "
         "protocols only after the request, framed as HTTP/1.1, is read)",
         [](const std::string &, const Message &w, const Message &l) {
             return w.verdict == Verdict::Refuse && l.verdict == Verdict::Accept && l.tunnel &&
                    l.method != "CONNECT" && !w.in_body &&
                    (w.code == WEIR_E_BAD_TRANSFER_ENCODING || w.code == WEIR_E_UNKNOWN_TRANSFER_CODING ||
                     w.code == WEIR_E_BAD_CONTENT_LENGTH || w.code == WEIR_E_CL_AND_TE) &&
                    count(l.fields, "upgrade") > 0 &&
                    (count(l.fields, "transfer-encoding") + count(l.fields, "content-length")) > 0;
         }},
        {"connection-close-wins",
         "weir closes an HTTP/1.0 connection whose Connection names both close and keep-alive "
         "(llhttp keeps it: for 1.0 it looks at keep-alive only)",
         "RFC 9112 9.3 (close is checked first: the connection does not persist)",
         [](const std::string &, const Message &w, const Message &l) {
             if (!(w.verdict == Verdict::Accept && l.verdict == Verdict::Accept && w.minor == 0 && !w.keep_alive &&
                   l.keep_alive))
                 return false;
             bool close = false, keep = false;
             for (const std::string &e : elements(w.fields, "connection")) {
                 close |= ieq(e, "close");
                 keep |= ieq(e, "keep-alive");
             }
             return close && keep;
         }},
        {"weir-limits", "weir's own bounds, kept even at the diff's large limits (512 fields)",
         "RFC 9110 5.4, RFC 9112 2.2 (a server MAY bound what it reads)",
         [](const std::string &, const Message &w, const Message &l) {
             return w.verdict == Verdict::Refuse && l.verdict == Verdict::Accept &&
                    (w.code == WEIR_E_TOO_MANY_HEADERS || w.code == WEIR_E_HEADERS_TOO_LARGE ||
                     w.code == WEIR_E_REQUEST_LINE_TOO_LONG || w.code == WEIR_E_CHUNK_EXT_TOO_LONG ||
                     w.code == WEIR_E_TRAILERS_TOO_LARGE || w.code == WEIR_E_BODY_TOO_LARGE);
         }},

        // ---- llhttp stricter than the RFCs ask
        {"method-registry", "llhttp knows a fixed list of methods; weir takes any token",
         "RFC 9110 9.1 (method = token; the registry is extensible, 16.1)",
         [](const std::string &, const Message &w, const Message &l) {
             return accept_refuse(w, l) && (l.code == HPE_INVALID_METHOD || l.code == HPE_INVALID_CONSTANT) &&
                    !llhttp_method(w.method);
         }},
        {"pri-preface",
         "llhttp takes the method PRI only as the start of HTTP/2's connection preface (PRI * HTTP/2.0): "
         "after a PRI head it refuses what is not the preface's SM line, or waits for that line; "
         "weir's parser takes PRI as any other token and leaves the answer to the handler, as Go's net/http "
         "and nginx do (the engine's first-bytes sniff takes the real preface before the parser sees it; "
         "with protocols http1 the preface is refused, 400 for its * target)",
         "RFC 9110 9.1 (method = token); RFC 9113 3.4 (the preface is chosen so that HTTP/1.1 servers do "
         "not go on; no rule asks them to refuse PRI on HTTP/1.1)",
         [](const std::string &, const Message &w, const Message &l) {
             return w.verdict == Verdict::Accept && w.method == "PRI" &&
                    ((l.verdict == Verdict::Refuse && l.code == HPE_INVALID_VERSION) ||
                     l.verdict == Verdict::Incomplete);
         }},
        {"cl-repeated", "llhttp refuses a Content-Length repeated with the same value (\"5, 5\" or two fields)",
         "RFC 9110 8.6 (a recipient MAY take identical values as one)",
         [](const std::string &, const Message &w, const Message &l) {
             return accept_refuse(w, l) &&
                    (l.code == HPE_UNEXPECTED_CONTENT_LENGTH || l.code == HPE_INVALID_CONTENT_LENGTH) &&
                    elements(w.fields, "content-length").size() > 1;
         }},
        {"cl-htab", "llhttp refuses HTAB as OWS around a Content-Length value",
         "RFC 9112 5 (field-line = field-name \":\" OWS field-value OWS; OWS includes HTAB)",
         [](const std::string &in, const Message &w, const Message &l) {
             return accept_refuse(w, l) && l.code == HPE_INVALID_CONTENT_LENGTH && l.err_pos < in.size() &&
                    in[l.err_pos] == '\t';
         }},
        {"te-empty-element", "llhttp refuses empty list elements in Transfer-Encoding (\"chunked,\")",
         "RFC 9110 5.6.1 (a recipient MUST parse and ignore empty elements)",
         [](const std::string &, const Message &w, const Message &l) {
             if (!accept_refuse(w, l) || l.code != HPE_INVALID_TRANSFER_ENCODING || !w.chunked)
                 return false;
             for (const std::string &e : elements(w.fields, "transfer-encoding"))
                 if (e.empty())
                     return true;
             return false;
         }},
        {"chunk-ext-grammar",
         "llhttp refuses BWS around ';' and '=', quoted-pair and obs-text in chunk extensions",
         "RFC 9112 7.1.1 (chunk-ext with BWS), RFC 9110 5.6.4 (quoted-string)",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!accept_refuse(w, l) || !w.chunked || !l.in_body || l.err_pos >= in.size())
                 return false;
             // llhttp points at the byte it refused, or (after a skip) just past it.
             auto odd = [&](size_t i) {
                 const unsigned char c = static_cast<unsigned char>(in[i]);
                 return c == ' ' || c == '\t' || c == '\\' || c >= 0x80;
             };
             for (const ChunkLine &c : chunk_lines(in, w))
                 for (size_t i = l.err_pos > c.ext ? l.err_pos - 1 : c.ext; i <= l.err_pos && i < c.cr; i++)
                     if (odd(i))
                         return true;
             return false;
         }},
        {"chunk-ext-after-value",
         "llhttp 8.1 refuses any chunk extension after one with a token value (\";a=b;c\": it goes back "
         "to reading the size)",
         "RFC 9112 7.1.1 (chunk-ext = *( BWS \";\" BWS chunk-ext-name [ BWS \"=\" BWS chunk-ext-val ] ))",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!accept_refuse(w, l) || !w.chunked || l.code != HPE_INVALID_CHUNK_SIZE || l.err_pos == 0)
                 return false;
             for (const ChunkLine &c : chunk_lines(in, w))
                 if (l.err_pos > c.ext && l.err_pos < c.cr && in[l.err_pos - 1] == ';' &&
                     in.find('=', c.ext) < l.err_pos - 1)
                     return true;
             return false;
         }},
        {"connection-htab", "llhttp does not take HTAB as OWS around Connection tokens (keep-alive\\t)",
         "RFC 9110 5.6.1, 7.6.1 (list elements with OWS; OWS includes HTAB)",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!(w.verdict == Verdict::Accept && l.verdict == Verdict::Accept && w.keep_alive != l.keep_alive))
                 return false;
             const std::string sp = htab_to_sp(in);
             return llhttp_side(sp.data(), sp.size()).keep_alive == w.keep_alive;
         }},
        {"te-htab", "llhttp does not take HTAB as OWS around a Transfer-Encoding coding (\"chunked\\t\")",
         "RFC 9112 5 (OWS around field values includes HTAB), RFC 9110 5.6.1",
         [](const std::string &in, const Message &w, const Message &l) {
             if (!accept_refuse(w, l) || l.code != HPE_INVALID_TRANSFER_ENCODING || !w.chunked)
                 return false;
             return sp_version_explained(in);
         }},
        {"te-htab-upgrade",
         "an Upgrade request framed \"Transfer-Encoding: chunked\\t\": llhttp, not taking HTAB as OWS, sees "
         "no chunked body and hands the upgrade over; weir reads the chunked body (and refuses what is in it, "
         "or waits for the rest)",
         "RFC 9112 5 (OWS around field values includes HTAB), RFC 9110 5.6.1",
         [](const std::string &in, const Message &w, const Message &l) {
             // weir in the body: refusing what is in it, or waiting for more of it
             if (!(w.verdict != Verdict::Accept && l.verdict == Verdict::Accept && l.tunnel && w.chunked &&
                   count(l.fields, "upgrade") > 0))
                 return false;
             const std::string sp = htab_to_sp(in);
             if (sp == in)
                 return false;
             // The SP version must agree as the oracle judges agreement (weir
             // waiting for more of a body llhttp refuses is no disagreement:
             // seed te_htab_upgrade_sp_body_refused), or be a listed class.
             Message l2 = llhttp_side(sp.data(), sp.size()), w2 = weir_side(sp.data(), sp.size());
             return disagreement(w2, l2) == nullptr || classify(sp, w2, l2) != nullptr;
         }},
        {"trailer-connection",
         "llhttp lets a Connection trailer field close the connection; weir never lets a trailer manage it",
         "RFC 9110 6.5.1 (fields for connection management cannot be trailers), 7.6.1",
         [](const std::string &, const Message &w, const Message &l) {
             return w.verdict == Verdict::Accept && l.verdict == Verdict::Accept && w.chunked && w.keep_alive &&
                    !l.keep_alive && count(w.trailers, "connection") > 0;
         }},
        {"trailer-framing-fields",
         "llhttp applies its Transfer-Encoding/Content-Length rules to trailer fields; weir never "
         "lets a trailer frame the message",
         "RFC 9110 6.5.1, 6.5.2 (framing fields cannot be trailers; a recipient may discard them)",
         [](const std::string &in, const Message &w, const Message &l) {
             return accept_refuse(w, l) && w.chunked && l.in_body && l.err_pos >= trailers_start(in, w) &&
                    (count(w.trailers, "transfer-encoding") + count(w.trailers, "content-length")) > 0;
         }},
    };
    return k;
}

inline const StrictClass *classify(const std::string &in, const Message &w, const Message &l) {
    for (const StrictClass &c : classes())
        if (c.match(in, w, l))
            return &c;
    return nullptr;
}

} // namespace diff_fuzz
