/* What bench/floor (epoll) and bench/uring-floor (io_uring) share, so the two
 * floors differ only in their loop: the canned answer (the same shape and
 * size as weir's: status line, Content-Type, Content-Length, Date, body; the
 * Date refreshed once a second) and the listener (--addr HOST:PORT, IPv4,
 * SO_REUSEADDR, backlog 4096, the "listening on" line run-bench reads). */
#ifndef WEIR_BENCH_FLOOR_COMMON_H
#define WEIR_BENCH_FLOOR_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static char resp_keep[256], resp_close[256];
static size_t resp_keep_len, resp_close_len;
static time_t resp_time;

static void refresh_date(void) {
    time_t now = time(NULL);
    if (now == resp_time)
        return;
    resp_time = now;
    char date[64];
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    resp_keep_len = (size_t)snprintf(resp_keep, sizeof resp_keep,
                                     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
                                     "Date: %s\r\n\r\nHello, World!", date);
    resp_close_len = (size_t)snprintf(resp_close, sizeof resp_close,
                                      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
                                      "Connection: close\r\nDate: %s\r\n\r\nHello, World!", date);
}

/* Parses [--addr HOST:PORT] and opens the listener (socket_flags: extra
 * SOCK_* flags, e.g. SOCK_NONBLOCK). Returns its fd; -2 after a usage
 * message, -1 after an error message. On success *addr holds the bound
 * address for floor_announce. */
static int floor_listen(int argc, char **argv, const char *name, int socket_flags, char *host, size_t host_cap,
                        struct sockaddr_in *addr) {
    int port = 0;
    snprintf(host, host_cap, "127.0.0.1");
    if (argc == 3 && !strcmp(argv[1], "--addr") && strrchr(argv[2], ':') && strlen(argv[2]) < host_cap) {
        port = atoi(strrchr(argv[2], ':') + 1);
        *strrchr(strcpy(host, argv[2]), ':') = 0;
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--addr HOST:PORT]\n", name);
        return -2;
    }
    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | socket_flags, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (lfd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        fprintf(stderr, "%s: bad address %s\n", name, host);
        return -1;
    }
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 4096) != 0) {
        fprintf(stderr, "%s: bind/listen: %s\n", name, strerror(errno));
        return -1;
    }
    *addr = a;
    return lfd;
}

/* The line run-bench waits for, with the port the kernel picked. */
static void floor_announce(int lfd, const char *host, struct sockaddr_in *addr) {
    socklen_t len = sizeof *addr;
    getsockname(lfd, (struct sockaddr *)addr, &len);
    printf("listening on %s:%u\n", host, ntohs(addr->sin_port));
    fflush(stdout);
}

#endif /* WEIR_BENCH_FLOOR_COMMON_H */
