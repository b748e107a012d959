// The request-smuggling seeds (fuzz/corpus/diff/smug_*, the same bytes behind
// the parser fuzzer's four control bytes in fuzz/corpus/parser/smug_*), each
// with the answer weir owes it: the published classes of docs/fuzzing.md
// (CL.TE, TE.CL, TE.TE obfuscation, Content-Length forms, chunk-size and
// chunk-extension tricks, line ends, folding, controls, Host and the target).
// A refusal must stay a refusal with its code; an acceptance must frame the
// body as listed (and, for absolute-form, name the target's host).
#include <dirent.h>

#include <fstream>
#include <set>
#include <sstream>

#include "../../../fuzz/oracle/diff_weir.h"
#include "http1_check.h"

namespace {

constexpr int kAccept = 1;
enum Framing { kNone, kLength, kChunked };

struct Seed {
    const char *name;
    int want;           // kAccept, or the WEIR_E_* code (the chunked body's, after the head, for smug_chunk_*)
    Framing framing;    // when accepted
    const char *body;   // when accepted: the decoded body
    const char *host;   // when accepted and not null: the request's host view
    int keep_alive = -1; // when accepted and not -1: whether the connection may carry another request
};

const Seed kSeeds[] = {
    // CL.TE and TE.CL: both framings, either order, 1.0 too.
    {"smug_cl_te", WEIR_E_CL_AND_TE},
    {"smug_te_cl", WEIR_E_CL_AND_TE},
    {"smug_te_cl_http10", WEIR_E_CL_AND_TE},
    {"smug_te_http10", WEIR_E_BAD_TRANSFER_ENCODING},
    // TE.TE: an obfuscated Transfer-Encoding.
    {"smug_te_xchunked", WEIR_E_BAD_TRANSFER_ENCODING},
    {"smug_te_xchunked_cl", WEIR_E_CL_AND_TE},
    {"smug_te_value_spaces", kAccept, kChunked, "hello"},
    {"smug_te_space_before_colon", WEIR_E_WS_BEFORE_COLON},
    {"smug_te_tab_before_colon", WEIR_E_WS_BEFORE_COLON},
    {"smug_te_leading_space_name", WEIR_E_OBS_FOLD},
    {"smug_te_obs_fold", WEIR_E_OBS_FOLD},
    {"smug_te_obs_fold_tab", WEIR_E_OBS_FOLD},
    {"smug_te_chunked_identity", WEIR_E_BAD_TRANSFER_ENCODING},
    {"smug_te_identity_chunked", WEIR_E_UNKNOWN_TRANSFER_CODING},
    {"smug_te_gzip_chunked", WEIR_E_UNKNOWN_TRANSFER_CODING},
    {"smug_te_two_fields", WEIR_E_BAD_TRANSFER_ENCODING},
    {"smug_te_chunked_twice", WEIR_E_BAD_TRANSFER_ENCODING},
    {"smug_te_chunked_param", WEIR_E_BAD_TRANSFER_ENCODING},
    {"smug_te_vtab", WEIR_E_BAD_HEADER_VALUE},
    {"smug_te_nul", WEIR_E_BAD_HEADER_VALUE},
    {"smug_te_quoted", WEIR_E_BAD_TRANSFER_ENCODING},
    {"smug_te_empty", WEIR_E_BAD_TRANSFER_ENCODING}, // llhttp reads no body: the chunks become the next request
    {"smug_te_uppercase", kAccept, kChunked, "hello"},
    {"smug_te_trailing_comma", kAccept, kChunked, "hello"}, // RFC 9110 5.6.1: empty elements are ignored
    {"smug_te_underscore_name", kAccept, kLength, "hello"}, // Transfer_Encoding is another field
    {"smug_te_ctl_in_name", WEIR_E_BAD_HEADER_NAME},
    // Content-Length forms.
    {"smug_cl_duplicate_differ", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_duplicate_same", kAccept, kLength, "hello"}, // RFC 9110 8.6
    {"smug_cl_list_differ", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_list_same", kAccept, kLength, "hello"},
    {"smug_cl_plus", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_minus", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_hex", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_underscore", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_inner_space", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_wraps_to_5", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_empty", WEIR_E_BAD_CONTENT_LENGTH},
    {"smug_cl_leading_zeros", kAccept, kLength, "hello"},
    {"smug_cl_tabs_around", kAccept, kLength, "hello"},
    {"smug_cl_space_before_colon", WEIR_E_WS_BEFORE_COLON},
    {"smug_cl_obs_fold", WEIR_E_OBS_FOLD},
    {"smug_cl_get_body", kAccept, kLength, "GET /admin HTTP/1.1\r\nHost: h\r\n\r\n"},
    // The chunk-size line and chunk data.
    {"smug_chunk_size_17_digits", WEIR_E_BAD_CHUNK},
    {"smug_chunk_size_16_zeros", kAccept, kChunked, "hello"},
    {"smug_chunk_size_hex_prefix", WEIR_E_BAD_CHUNK},
    {"smug_chunk_size_junk", WEIR_E_BAD_CHUNK},
    {"smug_chunk_size_leading_space", WEIR_E_BAD_CHUNK},
    {"smug_chunk_size_trailing_space", WEIR_E_BAD_CHUNK},
    {"smug_chunk_size_minus", WEIR_E_BAD_CHUNK},
    {"smug_chunk_size_underscore", WEIR_E_BAD_CHUNK},
    {"smug_chunk_size_bare_lf", WEIR_E_BAD_CHUNK},
    {"smug_chunk_ext_bare_lf", WEIR_E_BAD_CHUNK},
    {"smug_chunk_ext_bare_cr", WEIR_E_BAD_CHUNK},
    {"smug_chunk_ext_no_name", WEIR_E_BAD_CHUNK},
    {"smug_chunk_ext_quoted", kAccept, kChunked, "hello"},
    {"smug_chunk_data_no_crlf", WEIR_E_BAD_CHUNK},
    {"smug_chunk_data_bare_lf", WEIR_E_BAD_CHUNK},
    {"smug_chunk_last_bare_lf", WEIR_E_BAD_CHUNK},
    {"smug_chunk_end_bare_lf", WEIR_E_BAD_LINE_ENDING}, // llhttp 8.1 ends the body at "0\r\n\n"
    {"smug_chunk_trailer_framing", kAccept, kChunked, "hello"}, // trailers never frame
    // Line ends, folding, controls.
    {"smug_bare_lf_field", WEIR_E_BAD_LINE_ENDING},
    {"smug_head_end_bare_lf", WEIR_E_BAD_LINE_ENDING}, // llhttp 8.1 ends the head at "\r\n\n"
    {"smug_bare_cr_value", WEIR_E_BAD_LINE_ENDING},
    {"smug_bare_cr_request_line", WEIR_E_BAD_LINE_ENDING},
    {"smug_nul_in_name", WEIR_E_BAD_HEADER_NAME},
    {"smug_del_in_value", WEIR_E_BAD_HEADER_VALUE},
    {"smug_request_line_tab", WEIR_E_BAD_METHOD},
    {"smug_http09", WEIR_E_BAD_REQUEST_LINE},
    // Host and the request-target.
    {"smug_absolute_host_mismatch", kAccept, kNone, "", "a.example"}, // RFC 9112 3.2.2
    // CONNECT: what follows the head is a tunnel's, never a request (the connection closes).
    {"smug_connect_pipelined", kAccept, kNone, "", "a.example:443", 0},
    {"smug_connect_chunked", kAccept, kChunked, "", nullptr, 0},
    {"smug_absolute_no_host", WEIR_E_MISSING_HOST},
    {"smug_absolute_userinfo", WEIR_E_BAD_TARGET},
    {"smug_host_list", WEIR_E_BAD_HOST},
    {"smug_host_dup_same", WEIR_E_DUPLICATE_HOST},
    {"smug_host_empty_then_real", WEIR_E_DUPLICATE_HOST},
};

std::string slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string corpus(const char *target) { return std::string(WEIR_SOURCE_DIR) + "/fuzz/corpus/" + target; }

} // namespace

static void test_smuggling_seeds_answer(void **) {
    for (const Seed &s : kSeeds) {
        const std::string in = slurp(corpus("diff") + "/" + s.name);
        assert_true(!in.empty());
        const diff_fuzz::Message m = diff_fuzz::weir_side(in.data(), in.size());
        const bool ok = s.want == kAccept
                            ? m.verdict == diff_fuzz::Verdict::Accept && m.chunked == (s.framing == kChunked) &&
                                  m.body == s.body && (s.framing != kLength || !m.body.empty()) &&
                                  (s.keep_alive < 0 || m.keep_alive == (s.keep_alive == 1))
                            : m.verdict == diff_fuzz::Verdict::Refuse && m.code == s.want &&
                                  m.in_body == (strncmp(s.name, "smug_chunk_", 11) == 0);
        if (!ok) {
            print_error("%s: got %s %d (%s) body '%s', want %d (%s)\n", s.name,
                        m.verdict == diff_fuzz::Verdict::Accept ? "accept" : "not accept", m.code,
                        weir_err_name(m.code), m.body.c_str(), s.want, weir_err_name(s.want));
            fail();
        }
        if (s.host) {
            weir_http1_request req;
            weir_header_t h[16];
            assert_true(parse(in, &req, h, 16) > 0);
            assert_string_equal(str(req.host).c_str(), s.host);
        }
    }
}

// Every smug_ seed has an answer above, and its parser-corpus twin is the
// same request behind the parser fuzzer's control bytes (default limits,
// automatic scan level).
static void test_smuggling_seeds_listed(void **) {
    std::set<std::string> listed;
    for (const Seed &s : kSeeds)
        listed.insert(s.name);
    std::set<std::string> files;
    DIR *d = opendir(corpus("diff").c_str());
    assert_non_null(d);
    while (struct dirent *e = readdir(d))
        if (strncmp(e->d_name, "smug_", 5) == 0)
            files.insert(e->d_name);
    closedir(d);
    for (const std::string &f : files)
        if (!listed.count(f)) {
            print_error("fuzz/corpus/diff/%s has no expected answer in this test\n", f.c_str());
            fail();
        }
    assert_int_equal(files.size(), listed.size());
    for (const std::string &f : files) {
        const std::string raw = slurp(corpus("diff") + "/" + f);
        if (slurp(corpus("parser") + "/" + f) != std::string("\x03\x11\x22\x33", 4) + raw) {
            print_error("fuzz/corpus/parser/%s is not fuzz/corpus/diff/%s behind 03 11 22 33\n", f.c_str(),
                        f.c_str());
            fail();
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smuggling_seeds_answer),
        cmocka_unit_test(test_smuggling_seeds_listed),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
