/* The backends' names (weir_backend_name, weir_backend_by_name), which every
 * test runner and weir-demo's --backend take from the library instead of a
 * list of their own: every WEIR_BACKEND_* has its name and back, the values
 * are dense from 1 (the runners list them by counting up until NULL), and a
 * name or value no backend has is refused, never read as epoll. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <weir.h>

static void test_names_of_the_header_values(void **state) {
    (void)state;
    assert_string_equal(weir_backend_name(WEIR_BACKEND_EPOLL), "epoll");
    assert_string_equal(weir_backend_name(WEIR_BACKEND_URING), "uring");
    assert_int_equal(weir_backend_by_name("epoll"), WEIR_BACKEND_EPOLL);
    assert_int_equal(weir_backend_by_name("uring"), WEIR_BACKEND_URING);
}

static void test_dense_and_round_trip(void **state) {
    (void)state;
    uint32_t n = 0;
    for (uint32_t id = 1; weir_backend_name(id); id++) {
        assert_int_equal(weir_backend_by_name(weir_backend_name(id)), (int)id);
        n++;
    }
    /* Both header values are reached by the count from 1. */
    assert_true(n >= WEIR_BACKEND_URING);
}

static void test_unknown_is_refused(void **state) {
    (void)state;
    assert_null(weir_backend_name(0));
    assert_null(weir_backend_name(UINT32_MAX));
    uint32_t past = 1;
    while (weir_backend_name(past))
        past++;
    assert_null(weir_backend_name(past));
    assert_int_equal(weir_backend_by_name(NULL), -EINVAL);
    assert_int_equal(weir_backend_by_name(""), -EINVAL);
    assert_int_equal(weir_backend_by_name("bogus"), -EINVAL);
    assert_int_equal(weir_backend_by_name("io_uring"), -EINVAL); /* the log's name, not the short one */
    assert_int_equal(weir_backend_by_name("EPOLL"), -EINVAL);    /* exact: case matters */
    assert_int_equal(weir_backend_by_name("epoll "), -EINVAL);
}

/* The engine refuses the value past the table as it refuses 0: -EINVAL. */
static void test_engine_refuses_value_past_table(void **state) {
    (void)state;
    uint32_t past = 1;
    while (weir_backend_name(past))
        past++;
    weir_config cfg;
    weir_config_init(&cfg);
    cfg.workers = 1;
    cfg.mode = WEIR_MODE_DRIVEN;
    cfg.backend = past;
    weir_engine *e = NULL;
    assert_int_equal(weir_engine_create(&cfg, &e), -EINVAL);
    assert_null(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_of_the_header_values),
        cmocka_unit_test(test_dense_and_round_trip),
        cmocka_unit_test(test_unknown_is_refused),
        cmocka_unit_test(test_engine_refuses_value_past_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
