// A slot's compact peer address (lib/util/peer_addr.h): what goes in comes
// back byte for byte, whatever its length.
//   IPv4 and IPv6 sit inline (the 32 bytes every slot pays);
//   a named AF_UNIX peer (110 bytes) goes to the heap and comes back whole:
//     an inline-only holder would cut it to 28 bytes, which the compare of
//     every byte and of the length rejects (the arm that must lose is the
//     truncation the class exists to avoid);
//   set replaces (a long address replaced by a short one frees its copy:
//     ASan's leak check in SAN=1), clear empties; get zeroes what it does
//     not fill.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

#include "util/peer_addr.h"

#include "cmocka_cxx.h"

using weir::PeerAddr;

namespace {

void round_trip(const sockaddr_storage &in, socklen_t n) {
    PeerAddr p;
    assert_true(p.set(in, n));
    assert_int_equal(p.len(), n);
    assert_int_equal(p.sa()->sa_family, in.ss_family);
    sockaddr_storage out;
    std::memset(&out, 0xab, sizeof out);
    socklen_t m = 0;
    p.get(&out, &m);
    assert_int_equal(m, n);
    assert_memory_equal(&out, &in, n);
    for (size_t i = n; i < sizeof out; i++)
        assert_int_equal(reinterpret_cast<unsigned char *>(&out)[i], 0);
}

void test_inet_inline(void **) {
    sockaddr_storage ss{};
    auto *v4 = reinterpret_cast<sockaddr_in *>(&ss);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(8080);
    inet_pton(AF_INET, "10.1.2.3", &v4->sin_addr);
    round_trip(ss, sizeof(sockaddr_in));
    sockaddr_storage s6{};
    auto *v6 = reinterpret_cast<sockaddr_in6 *>(&s6);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(443);
    v6->sin6_scope_id = 7;
    inet_pton(AF_INET6, "2001:db8::1", &v6->sin6_addr);
    round_trip(s6, sizeof(sockaddr_in6));
}

void test_long_unix_whole(void **) {
    sockaddr_storage ss{};
    auto *un = reinterpret_cast<sockaddr_un *>(&ss);
    un->sun_family = AF_UNIX;
    std::memset(un->sun_path, 'p', sizeof un->sun_path - 1);
    round_trip(ss, sizeof(sockaddr_un));
}

void test_replace_and_clear(void **) {
    sockaddr_storage un{};
    un.ss_family = AF_UNIX;
    std::memset(reinterpret_cast<char *>(&un) + 2, 'q', 100);
    sockaddr_storage v4{};
    v4.ss_family = AF_INET;
    PeerAddr p;
    assert_int_equal(p.len(), 0);
    assert_true(p.set(un, 102));
    assert_true(p.set(v4, sizeof(sockaddr_in))); // frees the long copy
    assert_int_equal(p.len(), sizeof(sockaddr_in));
    assert_true(p.set(un, 102));
    p.clear();
    assert_int_equal(p.len(), 0);
    sockaddr_storage out;
    socklen_t m = 99;
    p.get(&out, &m);
    assert_int_equal(m, 0);
    assert_true(p.set(un, 500)); // longer than any address: held to sockaddr_storage's size
    assert_int_equal(p.len(), sizeof(sockaddr_storage));
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inet_inline),
        cmocka_unit_test(test_long_unix_whole),
        cmocka_unit_test(test_replace_and_clear),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
