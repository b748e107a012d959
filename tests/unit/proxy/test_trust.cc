// lib/proxy/trust.cc: the trusted sources of PROXY headers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "cmocka_cxx.h"
#include "proxy/trust.h"

using weir::proxy::TrustList;

namespace {

bool trusts(const TrustList &t, const char *addr) {
    sockaddr_storage ss{};
    socklen_t len;
    if (inet_pton(AF_INET, addr, &reinterpret_cast<sockaddr_in *>(&ss)->sin_addr) == 1) {
        ss.ss_family = AF_INET;
        len = sizeof(sockaddr_in);
    } else {
        assert_int_equal(inet_pton(AF_INET6, addr, &reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_addr), 1);
        ss.ss_family = AF_INET6;
        len = sizeof(sockaddr_in6);
    }
    return t.trusts(reinterpret_cast<sockaddr *>(&ss), len);
}

void test_trust_null_is_any(void **) {
    TrustList t;
    assert_true(t.parse(nullptr));
    assert_true(t.any());
    assert_true(trusts(t, "203.0.113.1"));
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    assert_true(t.trusts(reinterpret_cast<sockaddr *>(&u), sizeof u));
}

void test_trust_blocks(void **) {
    TrustList t;
    assert_true(t.parse(" 10.0.0.0/8 ,192.168.1.7,\t2001:db8::/32, 172.16.5.9/12, ::1"));
    assert_int_equal(t.size(), 5);
    assert_true(trusts(t, "10.255.1.2"));
    assert_false(trusts(t, "11.0.0.1"));
    assert_true(trusts(t, "192.168.1.7"));
    assert_false(trusts(t, "192.168.1.8"));
    assert_true(trusts(t, "172.31.0.1")); // host bits past /12 ignored
    assert_false(trusts(t, "172.32.0.1"));
    assert_true(trusts(t, "2001:db8:ffff::1"));
    assert_false(trusts(t, "2001:db9::1"));
    assert_true(trusts(t, "::1"));
    assert_false(trusts(t, "::2"));
    assert_true(trusts(t, "::ffff:10.1.2.3")); // a dual-stack listener's IPv4 client
    assert_false(trusts(t, "::ffff:11.1.2.3"));
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    assert_false(t.trusts(reinterpret_cast<sockaddr *>(&u), sizeof u));
}

void test_trust_prefix_edges(void **) {
    TrustList t;
    assert_true(t.parse("0.0.0.0/0"));
    assert_true(trusts(t, "1.2.3.4"));
    assert_false(trusts(t, "::1")); // an IPv4 block is no IPv6 one
    assert_true(t.parse("1.2.3.4/31, ::/0"));
    assert_true(trusts(t, "1.2.3.5"));
    assert_false(trusts(t, "1.2.3.6"));
    assert_true(trusts(t, "fe80::1"));
}

void test_trust_malformed(void **) {
    TrustList t;
    assert_true(t.parse("10.0.0.0/8"));
    for (const char *bad : {"", " ", ",", "10.0.0.0/8,", ",10.0.0.0/8", "10.0.0.0/33", "::/129", "10.0.0.0/",
                            "10.0.0.0/-1", "10.0.0.0/08", "10.0.0.0/8/8", "10.0.0", "example.org", "10.0.0.0 /8",
                            "1.2.3.4 5.6.7.8"}) {
        if (t.parse(bad))
            fail_msg("'%s' parsed", bad);
    }
    assert_int_equal(t.size(), 1); // a failed parse leaves the list alone
    assert_true(trusts(t, "10.1.1.1"));
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trust_null_is_any),
        cmocka_unit_test(test_trust_blocks),
        cmocka_unit_test(test_trust_prefix_edges),
        cmocka_unit_test(test_trust_malformed),
    };
    return cmocka_run_group_tests_name("proxy_trust", tests, nullptr, nullptr);
}
