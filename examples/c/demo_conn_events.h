/* weir-demo --conn-events: every connection's OPEN and CLOSE (weir_config.on_conn,
 * docs/api.md §5.11) as one line on stdout, for operators and outside probes:
 *
 *   conn open id=7 worker=0 peer=127.0.0.1:40312
 *   conn close id=7 worker=0 reason=peer peer=127.0.0.1:40312
 *
 * reason is weir_close_reason_name's (the names weir_metrics' closes.* use).
 * The callback runs on worker threads (and at destroy on the caller's), so
 * each line is written whole under stdout's own lock: lines never
 * interleave with each other or with the metrics SIGHUP prints. */
#ifndef WEIR_DEMO_CONN_EVENTS_H
#define WEIR_DEMO_CONN_EVENTS_H

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "weir.h"

#include "demo_json.h"

static void demo_conn_event(void *user, weir_worker *w, uint32_t worker, uint64_t conn_id, uint32_t event,
                            uint32_t reason, const struct sockaddr *peer, socklen_t len) {
    (void)user;
    (void)w;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (peer && len > 0 && (size_t)len <= sizeof ss)
        memcpy(&ss, peer, (size_t)len);
    char addr[INET6_ADDRSTRLEN + 16];
    demo_peer_text(&ss, addr, sizeof addr);
    char line[192];
    if (event == WEIR_CONN_OPEN)
        snprintf(line, sizeof line, "conn open id=%llu worker=%u peer=%s\n", (unsigned long long)conn_id, worker,
                 addr[0] ? addr : "-");
    else
        snprintf(line, sizeof line, "conn close id=%llu worker=%u reason=%s peer=%s\n", (unsigned long long)conn_id,
                 worker, weir_close_reason_name(reason), addr[0] ? addr : "-");
    flockfile(stdout);
    fputs(line, stdout);
    fflush(stdout);
    funlockfile(stdout);
}

#endif /* WEIR_DEMO_CONN_EVENTS_H */
