/*
 * uring-floor — the least an io_uring HTTP/1.1 responder can do: the
 * io_uring counterpart of bench/floor, with the same canned answers and the
 * same non-parsing (each "\r\n\r\n" ends a request; a head that contains
 * "Connection: close" gets the close variant, and the connection closes once
 * it is written). One thread, one ring, one io_uring_submit_and_wait per
 * pass; a multishot accept, a multishot recv per connection into one
 * provided-buffer ring, IORING_OP_SEND for the answers. Not shipped; built by
 * scripts/run-bench (liburing 2.3: the buffer ring is mmapped and registered
 * by hand, io_uring_setup_buf_ring is 2.4+).
 *
 *   uring-floor --addr 127.0.0.1:0      prints "listening on 127.0.0.1:PORT"
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../floor_common.h"

#define IN_CAP 16384
/* Two output buffers (one in flight, one filling) of half the epoll floor's
 * one: a conn stays about its size, under malloc's mmap threshold, so a
 * Connection: close run does not mmap and munmap per connection. */
#define OUT_CAP 32768
#define SQ_ENTRIES 1024
#define CQ_ENTRIES 8192
#define BUF_COUNT 1024 /* a power of two: the ring's index mask */
#define BUF_SIZE 4096
#define BGID 0

/* user_data: a conn pointer (malloc aligns to 16) with the operation in its low bits */
enum { OP_ACCEPT = 0, OP_RECV = 1, OP_SEND = 2, OP_CANCEL = 3, OP_CLOSE = 4, OP_MASK = 7 };

typedef struct conn {
    int fd;
    int refs;        /* operations in the kernel that name this conn */
    int recv_armed;  /* the multishot recv still posts */
    int sending;     /* a send is in flight from out */
    int close_after; /* a close answer is queued: read nothing more */
    int closing;     /* cancel and close are submitted */
    size_t in_len, out_off, out_len, pend_len;
    char *out, *pend; /* out is in flight; pend collects what comes next */
    char in[IN_CAP];
    char buf[2][OUT_CAP];
} conn;

static struct io_uring ring;
static struct io_uring_buf_ring *br;
static char *bufs;
static int br_added; /* buffers given back this pass, published once at its end */
static int lfd;

/* A full SQ is flushed rather than waited on: the pass's one submit_and_wait
 * stays the rule, this is the exception when a pass queues over 1024. */
static struct io_uring_sqe *sqe_get(void) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    while (!sqe) {
        io_uring_submit(&ring);
        sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
}

static uint64_t ud(conn *c, int op) { return (uint64_t)(uintptr_t)c | (uint64_t)op; }

static void arm_accept(void) {
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, ud(NULL, OP_ACCEPT));
}

static void arm_recv(conn *c) {
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BGID;
    io_uring_sqe_set_data64(sqe, ud(c, OP_RECV));
    c->recv_armed = 1;
    c->refs++;
}

static void send_out(conn *c) {
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_send(sqe, c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, ud(c, OP_SEND));
    c->sending = 1;
    c->refs++;
}

/* The recv may still be armed: cancel it first, and close whatever the cancel
 * finds (a hard link, so an -ENOENT from a recv already ended does not skip
 * the close). The conn is freed when the last of its operations completes. */
static void begin_close(conn *c) {
    if (c->closing)
        return;
    c->closing = 1;
    if (c->recv_armed) {
        struct io_uring_sqe *sqe = sqe_get();
        io_uring_prep_cancel64(sqe, ud(c, OP_RECV), 0);
        sqe->flags |= IOSQE_IO_HARDLINK;
        io_uring_sqe_set_data64(sqe, ud(c, OP_CANCEL));
        c->refs++;
    }
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_close(sqe, c->fd);
    io_uring_sqe_set_data64(sqe, ud(c, OP_CLOSE));
    c->refs++;
}

static void put(conn *c) {
    if (--c->refs == 0 && c->closing)
        free(c);
}

/* Answers the complete heads in p[0..n) that fit pend; returns the bytes consumed. */
static size_t answer(conn *c, const char *p, size_t n) {
    refresh_date();
    size_t off = 0;
    while (!c->close_after) {
        const char *end = memmem(p + off, n - off, "\r\n\r\n", 4);
        if (!end)
            break;
        size_t head = (size_t)(end - (p + off)) + 4;
        int close_it = memmem(p + off, head, "Connection: close", 17) != NULL;
        const char *r = close_it ? resp_close : resp_keep;
        size_t rl = close_it ? resp_close_len : resp_keep_len;
        if (c->pend_len + rl > OUT_CAP)
            break; /* answer the rest after this output is written */
        memcpy(c->pend + c->pend_len, r, rl);
        c->pend_len += rl;
        off += head;
        c->close_after = close_it;
    }
    return off;
}

/* Puts what pend holds in flight, unless a send is there already. */
static void flush(conn *c) {
    if (c->sending || !c->pend_len || c->closing)
        return;
    char *t = c->out;
    c->out = c->pend;
    c->pend = t;
    c->out_off = 0;
    c->out_len = c->pend_len;
    c->pend_len = 0;
    send_out(c);
}

/* The epoll floor's serve: heads straight from the recv buffer while nothing
 * waits in c->in (the common case: no copy), else appended to what waits. */
static void serve(conn *c, const char *p, size_t n) {
    if (c->close_after)
        return; /* the epoll floor reads nothing more once it owes a close */
    if (c->in_len) {
        if (n > IN_CAP - c->in_len) { /* a head larger than the buffer: not ours to serve */
            begin_close(c);
            return;
        }
        memcpy(c->in + c->in_len, p, n);
        c->in_len += n;
        p = c->in;
        n = c->in_len;
    }
    size_t used = answer(c, p, n);
    memmove(c->in, p + used, n - used);
    c->in_len = n - used;
    if (c->in_len == IN_CAP) {
        begin_close(c);
        return;
    }
    flush(c);
}

static void on_accept(struct io_uring_cqe *cqe) {
    if (!(cqe->flags & IORING_CQE_F_MORE))
        arm_accept();
    if (cqe->res < 0)
        return;
    int one = 1, fd = cqe->res;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn *c = (conn *)malloc(sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    memset(c, 0, offsetof(conn, in));
    c->fd = fd;
    c->out = c->buf[0];
    c->pend = c->buf[1];
    arm_recv(c);
}

static void on_recv(conn *c, struct io_uring_cqe *cqe) {
    if (cqe->flags & IORING_CQE_F_BUFFER) {
        unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        char *b = bufs + (size_t)bid * BUF_SIZE;
        if (cqe->res > 0 && !c->closing)
            serve(c, b, (size_t)cqe->res);
        io_uring_buf_ring_add(br, b, BUF_SIZE, (unsigned short)bid, io_uring_buf_ring_mask(BUF_COUNT), br_added++);
    }
    if (!(cqe->flags & IORING_CQE_F_MORE)) {
        c->recv_armed = 0;
        if (cqe->res == 0 || (cqe->res < 0 && cqe->res != -ENOBUFS))
            begin_close(c); /* EOF or a broken connection */
        else if (!c->closing)
            arm_recv(c); /* the ring ran dry or the kernel ended it: buffers are back by the next submit */
        put(c);
    }
}

static void on_send(conn *c, struct io_uring_cqe *cqe) {
    c->sending = 0;
    if (cqe->res < 0) {
        begin_close(c);
    } else if (c->out_off + (size_t)cqe->res < c->out_len) {
        c->out_off += (size_t)cqe->res; /* short: send the rest */
        if (!c->closing)
            send_out(c);
    } else if (!c->closing) {
        c->out_len = 0;
        if (c->in_len) /* heads that waited for room in pend */
            serve(c, "", 0);
        flush(c);
        if (c->close_after && !c->sending && !c->pend_len)
            begin_close(c);
    }
    put(c);
}

static int setup_buffers(void) {
    size_t ring_bytes = BUF_COUNT * sizeof(struct io_uring_buf);
    void *mem = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* populated up front, so RSS measurements see the pool as a fixed cost,
     * not as growth per connection */
    bufs = mmap(NULL, (size_t)BUF_COUNT * BUF_SIZE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED || bufs == MAP_FAILED)
        return -errno;
    br = (struct io_uring_buf_ring *)mem;
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof reg);
    reg.ring_addr = (uint64_t)(uintptr_t)br;
    reg.ring_entries = BUF_COUNT;
    reg.bgid = BGID;
    int rc = io_uring_register_buf_ring(&ring, &reg, 0);
    if (rc < 0)
        return rc;
    io_uring_buf_ring_init(br);
    for (int i = 0; i < BUF_COUNT; i++)
        io_uring_buf_ring_add(br, bufs + (size_t)i * BUF_SIZE, BUF_SIZE, (unsigned short)i,
                              io_uring_buf_ring_mask(BUF_COUNT), i);
    io_uring_buf_ring_advance(br, BUF_COUNT);
    return 0;
}

int main(int argc, char **argv) {
    char host[64];
    struct sockaddr_in a;
    lfd = floor_listen(argc, argv, "uring-floor", 0, host, sizeof host, &a);
    if (lfd < 0)
        return lfd == -2 ? 2 : 1;
    signal(SIGPIPE, SIG_IGN);

    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
    p.cq_entries = CQ_ENTRIES;
    int rc = io_uring_queue_init_params(SQ_ENTRIES, &ring, &p);
    if (rc < 0) {
        fprintf(stderr, "uring-floor: io_uring_queue_init_params: %s\n", strerror(-rc));
        return 1;
    }
    if ((rc = setup_buffers()) < 0) {
        fprintf(stderr, "uring-floor: provided-buffer ring: %s\n", strerror(-rc));
        return 1;
    }

    floor_announce(lfd, host, &a);

    arm_accept();
    for (;;) {
        rc = io_uring_submit_and_wait(&ring, 1);
        if (rc < 0 && rc != -EINTR && rc != -EBUSY) {
            fprintf(stderr, "uring-floor: io_uring_submit_and_wait: %s\n", strerror(-rc));
            return 1;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            conn *c = (conn *)(uintptr_t)(cqe->user_data & ~(uint64_t)OP_MASK);
            switch (cqe->user_data & OP_MASK) {
            case OP_ACCEPT: on_accept(cqe); break;
            case OP_RECV: on_recv(c, cqe); break;
            case OP_SEND: on_send(c, cqe); break;
            default: put(c); break; /* cancel, close */
            }
        }
        io_uring_cq_advance(&ring, seen);
        if (br_added) {
            io_uring_buf_ring_advance(br, br_added);
            br_added = 0;
        }
    }
}
