/*
 * floor — the least an epoll HTTP/1.1 responder can do, as the benchmarks'
 * floor: one thread, level-triggered epoll, no parsing. Each "\r\n\r\n" ends
 * a request (GET only, bodies are not read) and gets a canned answer; a head
 * that contains "Connection: close" gets the close variant, and the
 * connection closes once it is written. Not shipped; built by scripts/run-bench.
 *
 *   floor --addr 127.0.0.1:0      prints "listening on 127.0.0.1:PORT"
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../floor_common.h"

#define IN_CAP 16384
#define OUT_CAP 65536

typedef struct conn {
    int fd;
    int closing;
    int want_out; /* EPOLLOUT is armed */
    size_t in_len;
    size_t out_off, out_len;
    char in[IN_CAP];
    char out[OUT_CAP];
} conn;

static void drop(int ep, conn *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

/* Writes what is pending. Returns -1 when the connection is gone. */
static int flush_out(int ep, conn *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN) {
                if (!c->want_out) {
                    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                    c->want_out = 1;
                }
                return 0;
            }
            drop(ep, c);
            return -1;
        }
        c->out_off += (size_t)n;
    }
    c->out_off = c->out_len = 0;
    if (c->closing) {
        drop(ep, c);
        return -1;
    }
    if (c->want_out) { /* only when it was armed: the floor spends no syscall it can avoid */
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = 0;
    }
    return 0;
}

/* Answers every complete head in the input buffer that fits the output. */
static void serve(int ep, conn *c) {
    refresh_date();
    size_t off = 0;
    for (;;) {
        char *end = memmem(c->in + off, c->in_len - off, "\r\n\r\n", 4);
        if (!end)
            break;
        size_t head = (size_t)(end - (c->in + off)) + 4;
        int close_it = memmem(c->in + off, head, "Connection: close", 17) != NULL;
        const char *r = close_it ? resp_close : resp_keep;
        size_t rl = close_it ? resp_close_len : resp_keep_len;
        if (c->out_len + rl > OUT_CAP)
            break; /* answer the rest after this output is written */
        memcpy(c->out + c->out_len, r, rl);
        c->out_len += rl;
        off += head;
        if (close_it) {
            c->closing = 1;
            break;
        }
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    if (c->in_len == IN_CAP) { /* a head larger than the buffer: not ours to serve */
        drop(ep, c);
        return;
    }
    if (c->out_len)
        flush_out(ep, c);
}

static void on_readable(int ep, conn *c) {
    if (c->out_len || c->closing) /* still writing: read after the output drains */
        return;
    ssize_t n = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
    if (n <= 0) {
        if (n < 0 && errno == EAGAIN)
            return;
        drop(ep, c);
        return;
    }
    c->in_len += (size_t)n;
    serve(ep, c);
}

int main(int argc, char **argv) {
    char host[64];
    struct sockaddr_in a;
    int lfd = floor_listen(argc, argv, "floor", SOCK_NONBLOCK, host, sizeof host, &a);
    if (lfd < 0)
        return lfd == -2 ? 2 : 1;
    signal(SIGPIPE, SIG_IGN);
    int one = 1;
    floor_announce(lfd, host, &a);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            conn *c = (conn *)evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    conn *nc = (conn *)malloc(sizeof *nc);
                    if (!nc) {
                        close(fd);
                        continue;
                    }
                    nc->fd = fd;
                    nc->closing = nc->want_out = 0;
                    nc->in_len = nc->out_off = nc->out_len = 0;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            if (evs[i].events & EPOLLOUT) {
                if (flush_out(ep, c) < 0)
                    continue;
                if (c->out_len == 0 && c->in_len) /* answer what waited behind the output */
                    serve(ep, c);
                continue;
            }
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                on_readable(ep, c);
        }
    }
}
