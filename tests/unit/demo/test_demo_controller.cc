// Unit test of weir-demo's controller flags (examples/c/demo_args.h):
// --adaptive-controller, --controller-interval-ms and --controller fill a
// weir_adaptive_config over weir's defaults, and every misuse is refused.
// The policy itself is the library's: tests/unit/adaptive.
#include <cstring>
#include <initializer_list>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

#include "../../../examples/c/demo_args.h"

namespace {

int parse(demo_opts *o, std::initializer_list<const char *> args) {
    char *argv[16] = {const_cast<char *>("weir-demo")};
    int argc = 1;
    for (const char *a : args)
        argv[argc++] = const_cast<char *>(a);
    return demo_parse_args(o, argc, argv);
}

void test_demo_controller_flags(void **) {
    demo_opts o;
    assert_int_equal(parse(&o, {"--adaptive"}), 0);
    assert_false(o.controller); // off by default
    assert_int_equal(o.controller_cfg.interval_ms, 1000);
    assert_int_equal(o.controller_cfg.up_conns, 64);
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller-interval-ms", "200",
                                "--controller", "up_conns=9,down_conns=3,down_rps=7,lockout_ms=0"}),
                     0);
    assert_true(o.controller);
    assert_int_equal(o.controller_cfg.interval_ms, 200);
    assert_int_equal(o.controller_cfg.up_conns, 9);
    assert_int_equal(o.controller_cfg.down_conns, 3);
    assert_int_equal(o.controller_cfg.down_rps, 7);
    assert_int_equal(o.controller_cfg.lockout_ms, 0);
    assert_int_equal(o.controller_cfg.up_rps, 20000); // the rest keep their defaults
    // The errors (each prints the usage on stderr).
    assert_int_equal(parse(&o, {"--adaptive-controller"}), -1);                  // without --adaptive
    assert_int_equal(parse(&o, {"--adaptive", "--controller", "hold=2"}), -1); // tuning a controller that is off
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller", "up_conns=9"}),
                     -1); // down_conns 64 is not below 9
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller", "bogus=1"}), -1);
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller", "hold="}), -1);
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller", "hold=1x"}), -1);
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller-interval-ms", "5"}), -1);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_controller_flags),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
