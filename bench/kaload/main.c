/*
 * kaload — a closed-loop keep-alive load that logs every request: C
 * connections to HOST:PORT, each sending `GET /` and the next one as soon as
 * the answer is in, for S seconds, on one thread (epoll). Used by
 * bench/switch_dip.py to see what an adaptive switch does to throughput and
 * latency, so it records per request, not a total:
 *
 *   kaload HOST PORT C S OUT
 *
 * Prints "start NS" (CLOCK_MONOTONIC, the zero of every time in OUT) once
 * every connection is up and the first requests go out; at the end prints
 * "name value" lines (requests, the error counts, the in-flight requests
 * left, the oldest one's age) and writes OUT: one record per completed
 * request, two little-endian uint32, the time it was sent and its latency
 * (sent until the last byte of the answer was read), both in µs from start.
 *
 * Every failure is counted, never hidden: a refused or failed connect, a
 * reset or an error on read or write, a close by the server (EOF), an answer
 * that is not `200` or does not parse, a `Connection: close` from the
 * server. A failed connection is replaced at once (counted in reconnects), so
 * the load stays at C connections.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { BUF = 4096 };

typedef struct {
    int fd;
    int connecting; /* non-blocking connect under way: EPOLLOUT says when it is done */
    uint64_t sent_ns;
    size_t got;
    char buf[BUF];
} conn;

static struct {
    uint64_t requests, connect_errors, read_errors, write_errors, eofs, bad_answers, non200, server_closes,
        reconnects;
} st;

static struct sockaddr_in addr;
static char req[128];
static size_t req_len;
static int ep;
static uint64_t t0;
static uint32_t *rec; /* sent_us, latency_us pairs */
static size_t nrec, caprec;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(uint64_t sent, uint64_t done) {
    if (nrec + 2 > caprec) {
        caprec = caprec ? caprec * 2 : 1u << 20;
        rec = realloc(rec, caprec * sizeof *rec);
        if (!rec) {
            fprintf(stderr, "kaload: out of memory\n");
            exit(1);
        }
    }
    rec[nrec++] = (uint32_t)((sent - t0) / 1000);
    rec[nrec++] = (uint32_t)((done - sent) / 1000);
}

/* Opens c->fd, non-blocking; the connect completes under EPOLLOUT. */
static int open_conn(conn *c) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->got = 0;
    c->connecting = 1;
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) != 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

static int send_req(conn *c, uint64_t now) {
    c->sent_ns = now;
    c->got = 0;
    /* 40 bytes into an empty socket buffer (one request in flight per
     * connection): a short write would be a fault worth counting. */
    return send(c->fd, req, req_len, MSG_NOSIGNAL) == (ssize_t)req_len ? 0 : -1;
}

/* A broken connection is closed and replaced; the request it carried is lost
 * (and already counted by the caller). One that cannot even be opened again
 * is left at fd -1, and the main loop tries again on its next pass. */
static void replace(conn *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    st.reconnects++;
    if (open_conn(c) != 0)
        st.connect_errors++;
}

/* Whether [p, end) holds the token "close", in any case. */
static int has_close(const char *p, const char *end) {
    for (; p + 5 <= end; p++)
        if (!strncasecmp(p, "close", 5))
            return 1;
    return 0;
}

/* 1: one whole answer is in c->buf (checked and consumed); 0: not yet; -1: bad. */
static int answer_done(conn *c) {
    c->buf[c->got] = 0;
    char *end = strstr(c->buf, "\r\n\r\n");
    if (!end)
        return c->got >= BUF - 1 ? -1 : 0;
    size_t head = (size_t)(end + 4 - c->buf);
    long clen = -1;
    for (char *p = strstr(c->buf, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n")) {
        char *line = p + 2, *eol = strstr(line, "\r\n");
        if (!strncasecmp(line, "content-length:", 15))
            clen = strtol(line + 15, NULL, 10);
        else if (!strncasecmp(line, "connection:", 11) && has_close(line + 11, eol))
            st.server_closes++;
    }
    if (clen < 0 || strncmp(c->buf, "HTTP/1.1 ", 9) != 0)
        return -1;
    if (c->got < head + (size_t)clen)
        return c->got >= BUF - 1 ? -1 : 0;
    if (c->got > head + (size_t)clen)
        return -1; /* bytes after the answer: nothing was asked for them */
    if (strncmp(c->buf + 9, "200", 3) != 0)
        st.non200++;
    return 1;
}

static void on_event(conn *c, uint32_t events) {
    uint64_t now = now_ns();
    if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err || (events & (EPOLLERR | EPOLLHUP))) {
            st.connect_errors++;
            replace(c);
            return;
        }
        c->connecting = 0;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        if (send_req(c, now) != 0) {
            st.write_errors++;
            replace(c);
        }
        return;
    }
    ssize_t r = recv(c->fd, c->buf + c->got, BUF - 1 - c->got, 0);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (r <= 0) {
        if (r == 0)
            st.eofs++;
        else
            st.read_errors++;
        replace(c);
        return;
    }
    c->got += (size_t)r;
    int done = answer_done(c);
    if (done == 0)
        return;
    if (done < 0) {
        st.bad_answers++;
        replace(c);
        return;
    }
    st.requests++;
    record(c->sent_ns, now);
    if (send_req(c, now) != 0) {
        st.write_errors++;
        replace(c);
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: kaload HOST PORT CONNS SECONDS OUT\n");
        return 2;
    }
    int n = atoi(argv[3]);
    double secs = atof(argv[4]);
    addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (n <= 0 || secs <= 0 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
        fprintf(stderr, "kaload: bad arguments\n");
        return 2;
    }
    req_len = (size_t)snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s:%s\r\n\r\n", argv[1], argv[2]);
    ep = epoll_create1(EPOLL_CLOEXEC);
    conn *cs = calloc((size_t)n, sizeof *cs);
    if (ep < 0 || !cs) {
        perror("kaload");
        return 1;
    }
    t0 = now_ns();
    for (int i = 0; i < n; i++)
        if (open_conn(&cs[i]) != 0) {
            fprintf(stderr, "kaload: connection %d: %s\n", i, strerror(errno));
            return 1;
        }
    printf("start %llu\n", (unsigned long long)t0);
    fflush(stdout);
    uint64_t end = t0 + (uint64_t)(secs * 1e9);
    struct epoll_event evs[256];
    while (now_ns() < end) {
        int k = epoll_wait(ep, evs, 256, 10);
        if (k < 0 && errno != EINTR) {
            perror("kaload: epoll_wait");
            return 1;
        }
        for (int i = 0; i < k; i++)
            on_event(evs[i].data.ptr, evs[i].events);
        for (int i = 0; i < n; i++)
            if (cs[i].fd < 0 && open_conn(&cs[i]) != 0)
                st.connect_errors++;
    }
    uint64_t stop = now_ns(), oldest = 0;
    unsigned in_flight = 0;
    for (int i = 0; i < n; i++)
        if (cs[i].fd >= 0 && !cs[i].connecting) {
            in_flight++;
            if (stop - cs[i].sent_ns > oldest)
                oldest = stop - cs[i].sent_ns;
        }
    FILE *f = fopen(argv[5], "wb");
    if (!f || fwrite(rec, sizeof *rec, nrec, f) != nrec || fclose(f) != 0) {
        perror("kaload: writing the records");
        return 1;
    }
    printf("seconds %.3f\n", (double)(stop - t0) / 1e9);
    printf("requests %llu\n", (unsigned long long)st.requests);
    printf("connect_errors %llu\n", (unsigned long long)st.connect_errors);
    printf("read_errors %llu\n", (unsigned long long)st.read_errors);
    printf("write_errors %llu\n", (unsigned long long)st.write_errors);
    printf("eofs %llu\n", (unsigned long long)st.eofs);
    printf("bad_answers %llu\n", (unsigned long long)st.bad_answers);
    printf("non200 %llu\n", (unsigned long long)st.non200);
    printf("server_closes %llu\n", (unsigned long long)st.server_closes);
    printf("reconnects %llu\n", (unsigned long long)st.reconnects);
    printf("in_flight_at_end %u\n", in_flight);
    printf("oldest_in_flight_us %llu\n", (unsigned long long)(oldest / 1000));
    return 0;
}
