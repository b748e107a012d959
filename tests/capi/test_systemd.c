/* weir_engine_listen_systemd and weir_engine_store_systemd at the boundary,
 * from plain C: each documented return that needs no service manager (the
 * fake one of tests/scripts/demo_systemd.sh drives the rest). Each case sets
 * the environment it reads and checks what was unset. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <weir.h>

static void on_request(void *user, weir_exchange *ex) {
    (void)user;
    weir_respond(ex, 200, NULL, 0, "ok", 2, 0);
}

static weir_engine *engine(void) {
    weir_config cfg;
    weir_config_init(&cfg);
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.on_request = on_request;
    /* WEIR_TEST_BACKEND names a backend of the library's table; a name it
     * lacks fails here rather than running epoll under that name. */
    const char *be = getenv("WEIR_TEST_BACKEND");
    if (be && *be) {
        int id = weir_backend_by_name(be);
        assert_true(id > 0);
        cfg.backend = (uint32_t)id;
    }
    weir_engine *e = NULL;
    assert_int_equal(weir_engine_create(&cfg, &e), 0);
    return e;
}

static void set_listen(const char *pid, const char *fds, const char *names) {
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (pid)
        setenv("LISTEN_PID", pid, 1);
    if (fds)
        setenv("LISTEN_FDS", fds, 1);
    if (names)
        setenv("LISTEN_FDNAMES", names, 1);
}

static void assert_listen_unset(void) {
    assert_null(getenv("LISTEN_PID"));
    assert_null(getenv("LISTEN_FDS"));
    assert_null(getenv("LISTEN_FDNAMES"));
}

static void test_listen_bad_arguments(void **state) {
    (void)state;
    weir_systemd_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(weir_engine_listen_systemd(NULL, NULL, NULL), -EINVAL);
    weir_engine *e = engine();
    st.size = 4; /* shorter than any version of the struct */
    assert_int_equal(weir_engine_listen_systemd(e, NULL, &st), -EINVAL);
    weir_engine_destroy(e);
}

static void test_listen_nothing_passed(void **state) {
    (void)state;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    weir_engine *e = engine();
    set_listen(NULL, NULL, NULL);
    assert_int_equal(weir_engine_listen_systemd(e, NULL, NULL), -ENOENT);
    /* another process's variables: not ours, and unset all the same */
    set_listen("1", "1", "x");
    assert_int_equal(weir_engine_listen_systemd(e, NULL, NULL), -ENOENT);
    assert_listen_unset();
    set_listen(pid, "0", NULL);
    assert_int_equal(weir_engine_listen_systemd(e, NULL, NULL), -ENOENT);
    set_listen(pid, "2x", NULL);
    assert_int_equal(weir_engine_listen_systemd(e, NULL, NULL), -EINVAL);
    assert_listen_unset();
    /* the engine is still unused: it listens as usual */
    assert_int_equal(weir_engine_listen(e), 0);
    weir_engine_destroy(e);
}

/* A listening socket at fd 3 named "web": taken by name, refused by another. */
static void test_listen_by_name(void **state) {
    (void)state;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (fcntl(3, F_GETFD) >= 0) {
        skip(); /* fd 3 is something the test runner left open: not ours to replace */
    }
    for (int round = 0; round < 2; round++) {
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
        assert_int_equal(listen(l, 8), 0);
        if (l != 3) {
            assert_int_equal(dup2(l, 3), 3);
            close(l);
        }
        weir_engine *e = engine();
        weir_systemd_stats st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        set_listen(pid, "1", "web");
        int rc = weir_engine_listen_systemd(e, round == 0 ? "other" : "web", &st);
        assert_listen_unset();
        if (round == 0) {
            assert_int_equal(rc, -ENOENT);
            assert_true(fcntl(3, F_GETFD) >= 0); /* not ours: left open */
            close(3);
        } else {
            assert_int_equal(rc, 1);
            assert_int_equal(st.listeners, 1);
            assert_int_equal(st.fds, 1);
            assert_int_equal(st.connections, 0);
        }
        weir_engine_destroy(e); /* closes fd 3 when it took it */
    }
}

static void test_store_without_manager(void **state) {
    (void)state;
    weir_engine *e = engine();
    weir_systemd_stats st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(weir_engine_store_systemd(NULL, 0, NULL), -EINVAL);
    assert_int_equal(weir_engine_store_systemd(e, 0, &st), -ENOENT);
    setenv("NOTIFY_SOCKET", "relative/path", 1);
    assert_int_equal(weir_engine_store_systemd(e, 0, &st), -EINVAL);
    /* a manager that is there, an engine that is not listening */
    int m = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "weir-test-systemd-%d", (int)getpid());
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1));
    assert_int_equal(bind(m, (struct sockaddr *)&sa, len), 0);
    char name[sizeof sa.sun_path + 1];
    snprintf(name, sizeof name, "@%s", sa.sun_path + 1);
    setenv("NOTIFY_SOCKET", name, 1);
    assert_int_equal(weir_engine_store_systemd(e, 0, &st), WEIR_E_STATE);
    /* nobody at that name */
    setenv("NOTIFY_SOCKET", "@weir-test-systemd-nobody", 1);
    assert_int_equal(weir_engine_store_systemd(e, 0, &st), -ECONNREFUSED);
    unsetenv("NOTIFY_SOCKET");
    close(m);
    weir_engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen_bad_arguments),
        cmocka_unit_test(test_listen_nothing_passed),
        cmocka_unit_test(test_listen_by_name),
        cmocka_unit_test(test_store_without_manager),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
