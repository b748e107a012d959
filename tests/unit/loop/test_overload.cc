// The overload manager's decision (lib/loop/overload.cc): the pressure, the
// levels' order, and their hysteresis. Each case says which rule it holds;
// the loop's use of the levels is tested through sockets in
// tests/integration/test_overload.cc.
#include <unistd.h>

#include <cstdint>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/overload.h"

namespace {

using namespace weir;

// The fullest resource decides, per mille of its watermark; a watermark of
// 0 adds nothing however high its reading.
void pressure_is_the_fullest(void **) {
    OverloadMarks m;
    m.inflight = 100;
    m.fds = 1000;
    OverloadReadings r;
    r.inflight = 50;
    r.fds = 900;
    r.conns = 1u << 30; // no watermark: ignored
    assert_int_equal(overload_pressure(m, r), 900);
    r.inflight = 120;
    assert_int_equal(overload_pressure(m, r), 1200);
    r.mem = UINT64_MAX; // no overflow into a small figure
    m.mem = 1;
    assert_int_equal(overload_pressure(m, r), UINT32_MAX);
    assert_int_equal(overload_pressure(OverloadMarks{}, r), 0);
}

// Rising: each engage point passed adds a level, in order, several at once
// when the pressure jumps.
void levels_engage_in_order(void **) {
    assert_int_equal(overload_step(0, 799), OVERLOAD_NONE);
    assert_int_equal(overload_step(0, 800), OVERLOAD_NO_KEEPALIVE);
    assert_int_equal(overload_step(1, 900), OVERLOAD_SHRINK_ACCEPT);
    assert_int_equal(overload_step(2, 950), OVERLOAD_PAUSE_ACCEPT);
    assert_int_equal(overload_step(3, 1000), OVERLOAD_REFUSE);
    assert_int_equal(overload_step(0, 1000), OVERLOAD_REFUSE);
    assert_int_equal(overload_step(0, 949), OVERLOAD_SHRINK_ACCEPT);
}

// Falling: a level holds until the pressure drops below its release point,
// lower than where it engaged (the negative arm: a pressure between the two
// points would flap a manager without hysteresis; here it holds either way).
void levels_release_below_lower_points(void **) {
    // 503 engaged at 1000 holds down to 900, releases below it.
    assert_int_equal(overload_step(OVERLOAD_REFUSE, 950), OVERLOAD_REFUSE);
    assert_int_equal(overload_step(OVERLOAD_REFUSE, 900), OVERLOAD_REFUSE);
    assert_int_equal(overload_step(OVERLOAD_REFUSE, 899), OVERLOAD_PAUSE_ACCEPT);
    // ... and from below, 950 does not engage it.
    assert_int_equal(overload_step(OVERLOAD_PAUSE_ACCEPT, 999), OVERLOAD_PAUSE_ACCEPT);
    assert_int_equal(overload_step(OVERLOAD_PAUSE_ACCEPT, 849), OVERLOAD_SHRINK_ACCEPT);
    assert_int_equal(overload_step(OVERLOAD_SHRINK_ACCEPT, 799), OVERLOAD_NO_KEEPALIVE);
    assert_int_equal(overload_step(OVERLOAD_NO_KEEPALIVE, 750), OVERLOAD_NO_KEEPALIVE);
    assert_int_equal(overload_step(OVERLOAD_NO_KEEPALIVE, 699), OVERLOAD_NONE);
    // A collapse releases everything at once.
    assert_int_equal(overload_step(OVERLOAD_REFUSE, 0), OVERLOAD_NONE);
    // A pressure held between engage and release keeps whatever level it
    // found: no flapping across one threshold.
    uint8_t up = OVERLOAD_NONE, down = OVERLOAD_NO_KEEPALIVE;
    for (int i = 0; i < 10; i++) {
        up = overload_step(up, 750);
        down = overload_step(down, 750);
    }
    assert_int_equal(up, OVERLOAD_NONE);
    assert_int_equal(down, OVERLOAD_NO_KEEPALIVE);
}

// The manager over in-flight exchanges, as the loop uses it: a flood and its
// end, every action engaged once, then released; counts each engage.
void manager_flood_and_recovery(void **) {
    OverloadMarks m;
    m.inflight = 20;
    Overload o(m);
    OverloadReadings r;
    uint8_t seen_max = 0;
    for (uint64_t n = 0; n <= 20; n++) {
        r.inflight = n;
        o.update(r);
        if (o.level() > seen_max)
            seen_max = o.level();
        assert_int_equal(o.keep_alive_off(), n >= 16);
        assert_int_equal(o.accept_shrunk(), n >= 18);
        assert_int_equal(o.accept_paused(), n >= 19);
        assert_int_equal(o.refusing(), n >= 20);
    }
    assert_int_equal(seen_max, OVERLOAD_REFUSE);
    assert_int_equal(o.engaged(), 4);
    for (uint64_t n = 20; n-- > 0;) {
        r.inflight = n;
        o.update(r);
        assert_int_equal(o.refusing(), n >= 18);       // 90 %
        assert_int_equal(o.accept_paused(), n >= 17);  // 85 %
        assert_int_equal(o.accept_shrunk(), n >= 16);  // 80 %
        assert_int_equal(o.keep_alive_off(), n >= 14); // 70 %
    }
    assert_int_equal(o.level(), OVERLOAD_NONE);
    assert_int_equal(o.engaged(), 4); // falling engages nothing
    // Off: no watermark, no level whatever the load.
    Overload off;
    r.inflight = 1u << 20;
    assert_int_equal(off.update(r), OVERLOAD_NONE);
}

// The accept batch by level: as configured, shrunk to a quarter, none.
void accept_batch_by_level(void **) {
    assert_int_equal(overload_batch(OVERLOAD_NONE, 16), 16);
    assert_int_equal(overload_batch(OVERLOAD_NO_KEEPALIVE, 16), 16);
    assert_int_equal(overload_batch(OVERLOAD_SHRINK_ACCEPT, 16), 4);
    assert_int_equal(overload_batch(OVERLOAD_SHRINK_ACCEPT, 2), 1);
    assert_int_equal(overload_batch(OVERLOAD_SHRINK_ACCEPT, 0), 4); // a draining batch is bounded
    assert_int_equal(overload_batch(OVERLOAD_PAUSE_ACCEPT, 16), 0);
    assert_int_equal(overload_batch(OVERLOAD_REFUSE, 0), 0);
}

// The descriptor count follows what the process opens and closes.
void fd_count_follows(void **) {
    int64_t before = count_open_fds();
    assert_true(before >= 3);
    int fds[10];
    for (int &fd : fds)
        fd = ::dup(0);
    assert_int_equal(count_open_fds(), before + 10);
    for (int fd : fds)
        ::close(fd);
    assert_int_equal(count_open_fds(), before);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pressure_is_the_fullest),
        cmocka_unit_test(levels_engage_in_order),
        cmocka_unit_test(levels_release_below_lower_points),
        cmocka_unit_test(manager_flood_and_recovery),
        cmocka_unit_test(accept_batch_by_level),
        cmocka_unit_test(fd_count_follows),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
