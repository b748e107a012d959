/*
 * demo_handover.h — weir-demo's hot upgrade (docs/upgrade.md): with
 * --upgrade-socket PATH, SIGQUIT offers this process at PATH; a demo started
 * with --take-over PATH takes its listeners and connections. What each side
 * prints on stdout is a contract (tests/scripts/demo_handover.sh drives it):
 *   handover: offered at PATH
 *   handover: done {json}            the successor serves everything; we exit 0
 *   handover: failed: REASON {json}  nothing changed; we serve on
 *   handover: took {json}            (the successor) the old process is done
 *   handover: took-failed: REASON {json}  it vanished first; we serve alone
 * Header-only (see demo_json.h for why).
 */
#ifndef WEIR_DEMO_HANDOVER_H
#define WEIR_DEMO_HANDOVER_H

#include <stdio.h>

#include "weir.h"

typedef struct demo_handover {
    weir_handover *offer;  /* SIGQUIT's, until it ends */
    weir_handover *taking; /* --take-over's, until it ends */
} demo_handover;

static void handover_print(const char *what, int rc, weir_handover *h) {
    weir_handover_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    weir_handover_stats_get(h, &s);
    printf("handover: %s%s%s {\"listeners\":%u,\"sent\":%llu,\"returned\":%llu,\"closed\":%llu,"
           "\"received\":%llu,\"refused\":%llu,\"lost\":%llu,\"moving_ms\":%.3f}\n",
           what, rc < 0 ? ": " : "", rc < 0 ? weir_strerror(rc) : "", s.listeners, (unsigned long long)s.sent,
           (unsigned long long)s.returned, (unsigned long long)s.closed, (unsigned long long)s.received,
           (unsigned long long)s.refused, (unsigned long long)s.lost, (double)s.moving_ns / 1e6);
    fflush(stdout);
}

/* SIGQUIT. */
static void handover_offer(demo_handover *dh, weir_engine *e, const char *path, const weir_handover_options *o) {
    if (!path) {
        printf("handover: not offered: no --upgrade-socket\n");
    } else if (dh->offer || dh->taking) {
        printf("handover: not offered: one is under way\n");
    } else {
        int rc = weir_handover_offer(e, path, o, &dh->offer);
        if (rc < 0)
            printf("handover: not offered: %s\n", weir_strerror(rc));
        else
            printf("handover: offered at %s\n", path);
    }
    fflush(stdout);
}

/* The main loop's wait while a handover runs: it is polled. */
static int handover_timeout(const demo_handover *dh) { return dh->offer || dh->taking ? 20 : -1; }

/* weir_handover_wait's -ETIMEDOUT is also the error of a handover that failed
 * for a timeout (no successor within --handover-wait-ms): the state tells. */
static int handover_ended(weir_handover *h, int *rc) {
    *rc = weir_handover_wait(h, 0);
    if (*rc != -ETIMEDOUT)
        return 1;
    weir_handover_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    weir_handover_stats_get(h, &s);
    if (s.state != WEIR_HANDOVER_DONE && s.state != WEIR_HANDOVER_FAILED)
        return 0;
    *rc = weir_handover_wait(h, 0); /* it may have ended after the first wait: its own code (0: DONE) */
    return 1;
}

/* After every wakeup: 1 when the offer is done and the process should exit. */
static int handover_tick(demo_handover *dh) {
    int rc;
    if (dh->taking && handover_ended(dh->taking, &rc)) {
        handover_print(rc == 0 ? "took" : "took-failed", rc, dh->taking);
        weir_handover_free(dh->taking);
        dh->taking = NULL;
    }
    if (dh->offer && handover_ended(dh->offer, &rc)) {
        handover_print(rc == 0 ? "done" : "failed", rc, dh->offer);
        weir_handover_free(dh->offer);
        dh->offer = NULL;
        return rc == 0;
    }
    return 0;
}

#endif /* WEIR_DEMO_HANDOVER_H */
