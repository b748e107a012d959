// The config's defaults and zeros (lib/loop/config.cc) and the size rule they
// go through (lib/util/sized.h). No 0.2 input struct is shorter than its
// sizeof yet, so the rule's promise to a caller built before a field was
// appended (the field takes its default, the bytes past the caller's size are
// never read) is held here on a struct that has grown once.
#include <cstring>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/config.h"
#include "util/sized.h"

namespace {

// Version 1 ended at b; version 2 appended `added` (default 7) and a
// reserved_ that keeps tail padding out.
struct Grown {
    uint32_t size;
    uint32_t a;
    uint64_t b;
    uint32_t added;
    uint32_t reserved_;
};

} // namespace

template <> struct weir::sized::First<Grown> {
    static constexpr size_t value = WEIR_END_OF(Grown, b);
};

namespace {

using weir::sized::copy_in;
using weir::sized::copy_out;

Grown defaults() {
    Grown g{};
    g.size = sizeof g;
    g.a = 1;
    g.b = 2;
    g.added = 7;
    return g;
}

// A version-1 caller's struct, followed in memory by bytes it does not own.
struct V1InMemory {
    Grown g;
    void poison() { std::memset(static_cast<void *>(&g), 0xa5, sizeof g); }
};

void test_sized_input_past_the_size_takes_defaults(void **) {
    V1InMemory in;
    in.poison();
    in.g.size = WEIR_END_OF(Grown, b);
    in.g.a = 10;
    in.g.b = 20;
    Grown out = defaults();
    assert_true(copy_in(&in.g, &out));
    assert_int_equal(out.size, sizeof(Grown));
    assert_int_equal(out.a, 10);
    assert_int_equal(out.b, 20);
    assert_int_equal(out.added, 7); // not 0xa5a5a5a5: the caller's size stopped before it
    // A version-2 caller's value is read.
    in.g.size = sizeof in.g;
    in.g.added = 9;
    out = defaults();
    assert_true(copy_in(&in.g, &out));
    assert_int_equal(out.added, 9);
}

void test_sized_refuses_sizes_outside_the_rule(void **) {
    Grown in = defaults();
    const uint32_t bad[] = {0, WEIR_END_OF(Grown, b) - 1, sizeof(Grown) + 1, UINT32_MAX};
    for (uint32_t s : bad) {
        in.size = s;
        Grown out = defaults();
        out.a = 42;
        assert_false(copy_in(&in, &out));
        assert_int_equal(out.a, 42); // untouched
        Grown o2;
        std::memset(static_cast<void *>(&o2), 0xa5, sizeof o2);
        o2.size = s;
        assert_false(copy_out(defaults(), &o2));
        assert_int_equal(o2.a, 0xa5a5a5a5u);
    }
}

void test_sized_output_past_the_size_is_left_alone(void **) {
    Grown out;
    std::memset(static_cast<void *>(&out), 0xa5, sizeof out);
    out.size = WEIR_END_OF(Grown, b);
    assert_true(copy_out(defaults(), &out));
    assert_int_equal(out.size, WEIR_END_OF(Grown, b));
    assert_int_equal(out.a, 1);
    assert_int_equal(out.b, 2);
    assert_int_equal(out.added, 0xa5a5a5a5u);
}

void test_config_zero_is_the_default_where_it_has_no_meaning(void **) {
    weir_config d;
    weir_config_init(&d);
    weir_config z;
    std::memset(&z, 0, sizeof z);
    z.size = sizeof z;
    weir_config r;
    assert_true(weir::config_resolve(&z, &r));
    assert_int_equal(r.size, sizeof r);
    assert_string_equal(r.host, d.host);
    assert_int_equal(r.backend, WEIR_BACKEND_EPOLL);
    assert_int_equal(r.mode, WEIR_MODE_INLINE);
    assert_int_equal(r.backlog, 1024);
    assert_int_equal(r.read_buffer_size, 16384);
    assert_int_equal(r.max_output_bytes, 4194304);
    assert_int_equal(r.max_connections, 10000);
    assert_int_equal(r.max_pipeline, 64);
    // Zeros with a meaning of their own keep it (weir.h says which).
    assert_int_equal(r.port, 0);            // pick one
    assert_int_equal(r.workers, 0);         // online CPUs, resolved by create
    assert_int_equal(r.accept_batch, 0);    // drain
    assert_int_equal(r.defer_accept, 0);    // off
    assert_int_equal(r.linger_ms, 0);       // close at once
    assert_int_equal(r.tcp_nodelay, 0);     // off
    assert_int_equal(r.header_timeout_ms, 0); // no deadline
    assert_int_equal(r.idle_timeout_ms, 0);
    assert_int_equal(r.write_timeout_ms, 0);
    assert_int_equal(r.body_timeout_ms, 0); // = header_timeout_ms
    assert_null(r.limits);                  // the parser's defaults
    assert_null(r.on_request);
    assert_null(r.log);
    // Set values pass through.
    z.backlog = 5;
    z.max_pipeline = 3;
    assert_true(weir::config_resolve(&z, &r));
    assert_int_equal(r.backlog, 5);
    assert_int_equal(r.max_pipeline, 3);
    // weir_config_init's defaults resolve to themselves.
    assert_true(weir::config_resolve(&d, &r));
    assert_int_equal(std::memcmp(&r, &d, sizeof r), 0);
    // Sizes outside the rule.
    z.size = 0;
    assert_false(weir::config_resolve(&z, &r));
    z.size = sizeof z + 1;
    assert_false(weir::config_resolve(&z, &r));
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sized_input_past_the_size_takes_defaults),
        cmocka_unit_test(test_sized_refuses_sizes_outside_the_rule),
        cmocka_unit_test(test_sized_output_past_the_size_is_left_alone),
        cmocka_unit_test(test_config_zero_is_the_default_where_it_has_no_meaning),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
