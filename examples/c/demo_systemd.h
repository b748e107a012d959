/*
 * demo_systemd.h — weir-demo under systemd (docs/upgrade-systemd.md):
 * --systemd listens on the sockets systemd passed (socket activation, and
 * the connections a previous demo left in the fd store), else on --addr;
 * --fdstore stores the listeners and every connection in the fd store on
 * SIGTERM, before the exit. What each prints on stdout is a contract
 * (tests/scripts/demo_systemd.sh reads it):
 *   systemd: listening on N sockets, adopted M connections, closed K {json}
 *   systemd: none passed: REASON                      (then --addr)
 *   fdstore: stored L listeners, C connections, closed K {json}
 *   fdstore: not stored: REASON
 * Header-only (see demo_json.h for why).
 */
#ifndef WEIR_DEMO_SYSTEMD_H
#define WEIR_DEMO_SYSTEMD_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "weir.h"

static void systemd_json(const weir_systemd_stats *s) {
    printf(" {\"fds\":%u,\"image_error\":\"%s\"}\n", s->fds, s->image_error ? weir_err_name(s->image_error) : "");
    fflush(stdout);
}

/* Instead of weir_engine_listen: with --systemd, what systemd passed first. */
static int demo_systemd_listen(weir_engine *e, int systemd) {
    if (!systemd)
        return weir_engine_listen(e);
    weir_systemd_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    int rc = weir_engine_listen_systemd(e, NULL, &s);
    if (rc > 0) {
        printf("systemd: listening on %u sockets, adopted %llu connections, closed %llu", s.listeners,
               (unsigned long long)s.connections, (unsigned long long)s.closed);
        systemd_json(&s);
        return 0;
    }
    printf("systemd: none passed: %s\n", weir_strerror(rc));
    fflush(stdout);
    return rc == -ENOENT ? weir_engine_listen(e) : rc;
}

/* SIGTERM, with --fdstore: into the store; the exit follows either way. */
static void demo_systemd_store(weir_engine *e, int fdstore, uint32_t deadline_ms) {
    if (!fdstore)
        return;
    weir_systemd_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    int rc = weir_engine_store_systemd(e, (int64_t)deadline_ms * 1000000, &s);
    if (rc >= 0) {
        printf("fdstore: stored %u listeners, %llu connections, closed %llu", s.listeners,
               (unsigned long long)s.connections, (unsigned long long)s.closed);
        systemd_json(&s);
    } else {
        printf("fdstore: not stored: %s\n", weir_strerror(rc));
        fflush(stdout);
    }
}

#endif /* WEIR_DEMO_SYSTEMD_H */
