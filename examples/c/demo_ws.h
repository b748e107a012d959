/* weir-demo's GET /ws: an Upgrade request is answered 101 (weir_upgrade,
 * "Upgrade: echo"); when weir hands the connection back, weir-demo takes it
 * (weir_upgrade_take) and a thread of its own echoes raw bytes on it until
 * the peer closes, starting with the bytes that came past the request. A
 * GET /ws that does not ask for an upgrade is a 426. Included once, by
 * weir-demo.c. */
#ifndef DEMO_WS_H
#define DEMO_WS_H

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "weir.h"

typedef struct demo_ws_conn {
    int fd;
    size_t len;
    char early[4096];
} demo_ws_conn;

static int demo_ws_write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *demo_ws_echo(void *arg) {
    demo_ws_conn *c = (demo_ws_conn *)arg;
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK); /* this thread blocks; the loop is not involved any more */
    char buf[16384];
    if (demo_ws_write_all(c->fd, c->early, c->len) == 0) {
        for (;;) {
            ssize_t n = read(c->fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0 || demo_ws_write_all(c->fd, buf, (size_t)n) != 0)
                break;
        }
    }
    close(c->fd);
    free(c);
    return NULL;
}

/* A handle weir handed back after a 101: 1 if it was one (taken), else 0. */
static int demo_ws_take(weir_exchange *ex) {
    int fd = -1;
    char early[4096];
    size_t len = 0;
    int rc = weir_upgrade_take(ex, &fd, early, sizeof early, &len);
    if (rc != 0)
        /* WEIR_E_STATE: a request; GONE: the client left first; ENOBUFS: more
         * than 4 KiB came early, refused (the connection closes with the engine) */
        return rc != WEIR_E_STATE && rc != WEIR_E_STALE;
    demo_ws_conn *c = malloc(sizeof *c);
    if (!c) {
        close(fd);
        return 1;
    }
    c->fd = fd;
    c->len = len;
    memcpy(c->early, early, len);
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, demo_ws_echo, c) != 0) {
        close(c->fd);
        free(c);
    }
    pthread_attr_destroy(&a);
    return 1;
}

static void demo_ws_begin(weir_exchange *ex, const weir_request *r, const weir_header_t *text) {
    static const weir_header_t up = {{"Upgrade", 7}, {"echo", 4}};
    if (!(r->flags & WEIR_REQ_UPGRADE) || weir_upgrade(ex, &up, 1) != 0)
        weir_respond(ex, 426, text, 1, "upgrade required\n", 17, 0);
}

#endif
