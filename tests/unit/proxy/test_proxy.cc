// lib/proxy/proxy.cc: the PROXY protocol parser. Every case is parsed whole
// (with HTTP bytes after it, which it must leave alone) and split at every
// byte boundary: a first call with the bytes before the split must say More
// (or, for a refusal, the same refusal: some are seen early), and the call
// with everything the whole verdict.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>
#include <vector>

#include "cmocka_cxx.h"
#include "proxy/proxy.h"
#include "support/proxy_text.h"

using namespace weir::proxy;
using namespace proxytext;

namespace {

const std::string kHttp = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

struct Case {
    const char *name;
    std::string bytes; // the header alone (kHttp follows in the whole run)
    Status status;
    Cause cause;
    const char *src; // Done: the source ("" = keep the socket's peer)
    const char *dst;
    uint8_t version;
    size_t max_bytes = 4096;
};

std::vector<Case> cases() {
    std::string ssl = std::string("\x05\0\0\0\0", 5) + tlv(PP2_SUBTYPE_SSL_VERSION, "TLSv1.3") +
                      tlv(PP2_SUBTYPE_SSL_CIPHER, "TLS_AES_128_GCM_SHA256");
    std::string b4 = v4_block("192.0.2.1", "10.0.0.1", 56324, 80);
    std::string bad_crc = with_crc(v2(0x21, 0x11, b4));
    bad_crc[17] ^= 0x40;
    std::string unix_block(216, '\0');
    unix_block.replace(0, 6, "/tmp/a");
    return {
        {"v1 tcp4", "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n", Status::Done, Cause::None,
         "192.0.2.1:56324", "198.51.100.2:443", 1},
        {"v1 tcp6", "PROXY TCP6 2001:db8::1 ::ffff:10.0.0.1 0 65535\r\n", Status::Done, Cause::None,
         "[2001:db8::1]:0", "[::ffff:10.0.0.1]:65535", 1},
        {"v1 unknown", "PROXY UNKNOWN\r\n", Status::Done, Cause::None, "", "", 1},
        {"v1 unknown with addresses", "PROXY UNKNOWN 1.2.3.4 5.6.7.8 1 2\r\n", Status::Done, Cause::None, "", "", 1},
        {"v1 longest", "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
                       "65535 65535\r\n",
         Status::Done, Cause::None, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
         "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535", 1},
        {"v1 port 65536", "PROXY TCP4 1.2.3.4 5.6.7.8 65536 1\r\n", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 port leading zero", "PROXY TCP4 1.2.3.4 5.6.7.8 080 1\r\n", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 octet leading zero", "PROXY TCP4 1.2.3.04 5.6.7.8 80 1\r\n", Status::Error, Cause::Malformed, "", "",
         0},
        {"v1 v6 in tcp4", "PROXY TCP4 ::1 ::1 80 1\r\n", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 two spaces", "PROXY TCP4  1.2.3.4 5.6.7.8 80 1\r\n", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 six fields", "PROXY TCP4 1.2.3.4 5.6.7.8 80 1 2\r\n", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 four fields", "PROXY TCP4 1.2.3.4 5.6.7.8 80\r\n", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 udp4", "PROXY UDP4 1.2.3.4 5.6.7.8 80 1\r\n", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 bare LF", "PROXY TCP4 1.2.3.4 5.6.7.8 80 1\n", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 CR alone", "PROXY TCP4 1.2.3.4 5.6.7.8 80 1\rX", Status::Error, Cause::Malformed, "", "", 0},
        {"v1 lower case", "proxy TCP4 1.2.3.4 5.6.7.8 80 1\r\n", Status::Error, Cause::Missing, "", "", 0},
        {"v1 no CRLF in 107", "PROXY UNKNOWN " + std::string(93, 'x'), Status::Error, Cause::Oversized, "", "", 0},
        {"v1 LF as byte 108", "PROXY UNKNOWN " + std::string(92, 'x') + "\r\n", Status::Error, Cause::Oversized, "",
         "", 0},
        {"v1 107 bytes", "PROXY UNKNOWN " + std::string(91, 'x') + "\r\n", Status::Done, Cause::None, "", "", 1},
        {"missing", kHttp, Status::Error, Cause::Missing, "", "", 0},
        {"v2 tcp4", v2(0x21, 0x11, b4), Status::Done, Cause::None, "192.0.2.1:56324", "10.0.0.1:80", 2},
        {"v2 tcp4, unspecified transport", v2(0x21, 0x10, b4), Status::Done, Cause::None, "192.0.2.1:56324",
         "10.0.0.1:80", 2},
        {"v2 tcp6", v2(0x21, 0x21, v6_block("2001:db8::1", "2001:db8::2", 1, 443)), Status::Done, Cause::None,
         "[2001:db8::1]:1", "[2001:db8::2]:443", 2},
        {"v2 tlvs and crc",
         with_crc(v2(0x21, 0x11, b4,
                     tlv(PP2_TYPE_ALPN, "h2") + tlv(PP2_TYPE_AUTHORITY, "example.org") +
                         tlv(PP2_TYPE_UNIQUE_ID, std::string(128, 'u')) + tlv(PP2_TYPE_SSL, ssl) +
                         tlv(PP2_TYPE_NETNS, "ns") + tlv(PP2_TYPE_NOOP, "") + tlv(0xEE, "custom"))),
         Status::Done, Cause::None, "192.0.2.1:56324", "10.0.0.1:80", 2},
        {"v2 local ignores its block", v2(0x20, 0x77, "anything at all"), Status::Done, Cause::None, "", "", 2},
        {"v2 unspec", v2(0x21, 0x00, ""), Status::Done, Cause::None, "", "", 2},
        {"v2 unix", v2(0x21, 0x31, unix_block), Status::Done, Cause::None, "", "", 2},
        {"v2 bad crc", bad_crc, Status::Error, Cause::Checksum, "", "", 0},
        {"v2 crc of 3 bytes", v2(0x21, 0x11, b4, tlv(PP2_TYPE_CRC32C, "abc")), Status::Error, Cause::Malformed, "",
         "", 0},
        {"v2 two crcs", with_crc(with_crc(v2(0x21, 0x11, b4))), Status::Error, Cause::Malformed, "", "", 0},
        {"v2 unique id of 129", v2(0x21, 0x11, b4, tlv(PP2_TYPE_UNIQUE_ID, std::string(129, 'u'))), Status::Error,
         Cause::Malformed, "", "", 0},
        {"v2 ssl too short", v2(0x21, 0x11, b4, tlv(PP2_TYPE_SSL, "abcd")), Status::Error, Cause::Malformed, "", "",
         0},
        {"v2 ssl sub-tlv past its end", v2(0x21, 0x11, b4, tlv(PP2_TYPE_SSL, std::string(5, '\0') + "\x21\x00\x09x")),
         Status::Error, Cause::Malformed, "", "", 0},
        {"v2 tlv past the header", v2(0x21, 0x11, b4, std::string("\x01\x00\x05" "ab", 5)), Status::Error,
         Cause::Malformed, "", "", 0},
        {"v2 tlv header cut", v2(0x21, 0x11, b4, std::string("\x01\x00", 2)), Status::Error, Cause::Malformed, "",
         "", 0},
        {"v2 block too short", v2(0x21, 0x21, b4), Status::Error, Cause::Malformed, "", "", 0},
        {"v2 udp", v2(0x21, 0x12, b4), Status::Error, Cause::Malformed, "", "", 0},
        {"v2 family 4", v2(0x21, 0x41, b4), Status::Error, Cause::Malformed, "", "", 0},
        {"v2 version 1", kV2Sig + std::string("\x11\x11\x00\x0c", 4) + b4, Status::Error, Cause::Malformed, "", "",
         0},
        {"v2 command 2", kV2Sig + std::string("\x22\x11\x00\x0c", 4) + b4, Status::Error, Cause::Malformed, "", "",
         0},
        {"v2 past max_bytes", v2(0x21, 0x11, b4, tlv(0xE0, std::string(300, 'x'))), Status::Error, Cause::Oversized,
         "", "", 0, 300},
        {"v2 at max_bytes", v2(0x21, 0x11, b4, tlv(0xE0, std::string(269, 'x'))), Status::Done, Cause::None,
         "192.0.2.1:56324", "10.0.0.1:80", 2, 300},
        {"v2 signature broken", std::string("\r\n\r\n\0\r\nQUIX\n", 12) + "\x21\x11\x00\x0c" + b4, Status::Error,
         Cause::Missing, "", "", 0},
    };
}

void check(const Case &c, const std::string &all, const Result &r, const Header &h) {
    if (r.status != c.status || r.cause != c.cause)
        fail_msg("%s: status %d cause %s, want %d %s", c.name, static_cast<int>(r.status), cause_name(r.cause),
                 static_cast<int>(c.status), cause_name(c.cause));
    if (c.status != Status::Done)
        return;
    if (r.consumed != c.bytes.size())
        fail_msg("%s: consumed %zu of %zu", c.name, r.consumed, all.size());
    if (h.version != c.version || addr_text(h.src) != c.src || addr_text(h.dst) != c.dst ||
        h.keep_peer != (*c.src == 0))
        fail_msg("%s: v%d src '%s' dst '%s' keep %d", c.name, h.version, addr_text(h.src).c_str(),
                 addr_text(h.dst).c_str(), h.keep_peer);
}

void test_proxy_cases_whole_and_split(void **) {
    for (const Case &c : cases()) {
        // Whole, with HTTP after it (a refusal has nothing after it: a
        // header cut short would otherwise take the HTTP as its rest).
        std::string all = c.status == Status::Done ? c.bytes + kHttp : c.bytes;
        Header h;
        check(c, all, parse(all.data(), all.size(), c.max_bytes, &h), h);
        for (size_t k = 0; k < c.bytes.size(); k++) {
            Header early;
            Result r = parse(all.data(), k, c.max_bytes, &early);
            if (r.status == Status::More)
                continue;
            if (c.status == Status::Error && r.status == Status::Error && r.cause == c.cause)
                continue; // seen early: the same refusal
            fail_msg("%s: split at %zu says %d %s", c.name, k, static_cast<int>(r.status), cause_name(r.cause));
        }
        Header again;
        check(c, all, parse(all.data(), all.size(), c.max_bytes, &again), again);
    }
}

void test_proxy_empty_is_more(void **) {
    Header h;
    assert_true(parse("", 0, 4096, &h).status == Status::More);
    assert_true(parse("P", 1, 4096, &h).status == Status::More);
    assert_true(parse("\r", 1, 4096, &h).status == Status::More);
    assert_true(parse("G", 1, 4096, &h).status == Status::Error);
}

void test_proxy_crc32c(void **) {
    // RFC 3720 B.4: 32 bytes of zeros, and the standard check value.
    std::string zeros(32, '\0');
    assert_int_equal(crc32c(0, zeros.data(), zeros.size()), 0x8A9136AA);
    assert_int_equal(crc32c(0, "123456789", 9), 0xE3069283);
    uint32_t part = crc32c(0, "1234", 4);
    assert_int_equal(crc32c(part, "56789", 5), 0xE3069283);
}

void test_proxy_tlv_walk(void **) {
    std::string tl = tlv(PP2_TYPE_ALPN, "h2") + tlv(PP2_TYPE_NOOP, "");
    std::string h = v2(0x21, 0x11, v4_block("1.2.3.4", "5.6.7.8", 1, 2), tl);
    Header hd;
    Result r = parse(h.data(), h.size(), 4096, &hd);
    assert_true(r.status == Status::Done);
    assert_int_equal(hd.tlv_len, tl.size());
    auto *p = reinterpret_cast<const uint8_t *>(h.data()) + hd.tlv_off;
    const uint8_t *end = p + hd.tlv_len;
    Tlv t;
    assert_true(tlv_next(&p, end, &t));
    assert_int_equal(t.type, PP2_TYPE_ALPN);
    assert_int_equal(t.len, 2);
    assert_memory_equal(t.value, "h2", 2);
    assert_true(tlv_next(&p, end, &t));
    assert_int_equal(t.type, PP2_TYPE_NOOP);
    assert_false(tlv_next(&p, end, &t));
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proxy_cases_whole_and_split),
        cmocka_unit_test(test_proxy_empty_is_more),
        cmocka_unit_test(test_proxy_crc32c),
        cmocka_unit_test(test_proxy_tlv_walk),
    };
    return cmocka_run_group_tests_name("proxy", tests, nullptr, nullptr);
}
