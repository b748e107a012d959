/*
 * idle — opens N keep-alive connections to HOST:PORT, sends one GET / on each
 * and reads its answer (so every connection is accepted and has served a
 * request, whatever TCP_DEFER_ACCEPT says), then holds them all idle. Prints
 * "ready N" once every answer is in, and exits (closing them) when its
 * standard input reaches EOF. Used by scripts/run-bench to measure the
 * server's memory per idle connection.
 *
 * With "silent" it only connects and never sends a byte: "ready N" then means
 * N handshakes completed on the client's side, not that the server accepted
 * them (a TCP_DEFER_ACCEPT listener holds them back until its SYN-ACK
 * retransmit); scripts/run-bench waits for the accept queue itself.
 *
 *   idle 127.0.0.1 8080 5000
 *   idle 127.0.0.1 8080 5000 silent
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "silent"))) {
        fprintf(stderr, "usage: idle HOST PORT N [silent]\n");
        return 2;
    }
    int silent = argc == 5;
    int n = atoi(argv[3]);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (n <= 0 || inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
        fprintf(stderr, "idle: bad arguments\n");
        return 2;
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < (rlim_t)n + 64) {
        rl.rlim_cur = (rlim_t)n + 64;
        if (rl.rlim_max < rl.rlim_cur)
            rl.rlim_max = rl.rlim_cur;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            perror("idle: setrlimit");
            return 1;
        }
    }
    int *fds = calloc((size_t)n, sizeof *fds);
    char host_hdr[80];
    snprintf(host_hdr, sizeof host_hdr, "GET / HTTP/1.1\r\nHost: %s:%s\r\n\r\n", argv[1], argv[2]);
    size_t req_len = strlen(host_hdr);
    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&a, sizeof a) != 0) {
            fprintf(stderr, "idle: connection %d: %s\n", i, strerror(errno));
            return 1;
        }
        if (silent)
            continue;
        if (send(fds[i], host_hdr, req_len, MSG_NOSIGNAL) != (ssize_t)req_len) {
            fprintf(stderr, "idle: send %d: %s\n", i, strerror(errno));
            return 1;
        }
    }
    /* Read every answer: the head and the 13-byte body arrive in one write
     * on loopback; anything that ends in "Hello, World!" counts. */
    double deadline = now_s() + 60;
    char buf[4096];
    for (int i = 0; i < n && !silent; i++) {
        struct pollfd p = {fds[i], POLLIN, 0};
        size_t got = 0;
        for (;;) {
            int left = (int)((deadline - now_s()) * 1000);
            if (left <= 0 || poll(&p, 1, left) <= 0) {
                fprintf(stderr, "idle: no answer on connection %d\n", i);
                return 1;
            }
            ssize_t r = recv(fds[i], buf + got, sizeof buf - 1 - got, 0);
            if (r <= 0) {
                fprintf(stderr, "idle: connection %d closed before its answer\n", i);
                return 1;
            }
            got += (size_t)r;
            buf[got] = 0;
            if (strstr(buf, "Hello, World!") || got == sizeof buf - 1)
                break;
        }
    }
    printf("ready %d\n", n);
    fflush(stdout);
    while (read(0, buf, sizeof buf) > 0) {
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    free(fds);
    return 0;
}
