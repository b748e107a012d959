#include "handover/wire.h"

#include "conn/conn.h"

#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weir::handover {

ImageBody to_body(const ConnImage &img, uint64_t seq) {
    ImageBody b{};
    b.seq = seq;
    b.id = img.id;
    b.requests = img.requests;
    b.responses = img.responses;
    b.parse_errors = img.parse_errors;
    b.continues_sent = img.continues_sent;
    b.unread_len = img.unread_len;
    b.peer_len = img.peer_len;
    b.served = (img.served ? 1u : 0u) | (img.sniff ? kImageSniff : 0u);
    std::memcpy(b.peer, &img.peer, sizeof b.peer);
    return b;
}

void from_body(const ImageBody &b, ConnImage &img) {
    img.id = b.id;
    img.requests = b.requests;
    img.responses = b.responses;
    img.parse_errors = b.parse_errors;
    img.continues_sent = b.continues_sent;
    img.served = (b.served & 1u) != 0;
    img.sniff = (b.served & kImageSniff) != 0;
    img.peer_len = b.peer_len;
    std::memcpy(&img.peer, b.peer, sizeof img.peer);
}

void attach_fds(msghdr &mh, unsigned char *ctl, const int *fds, size_t nfds) {
    if (!nfds)
        return;
    mh.msg_control = ctl;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
}

int send_msg(int sock, Type t, const void *body, size_t len, const void *tail, size_t tail_len, const int *fds,
             size_t nfds, int flags) {
    if (nfds > kMaxFds || sizeof(Head) + len + tail_len > kMaxMsg)
        return -EMSGSIZE;
    Head h{kMagic, static_cast<uint16_t>(t), kProto, static_cast<uint32_t>(len + tail_len), 0};
    iovec iov[3] = {{&h, sizeof h}, {const_cast<void *>(body), len}, {const_cast<void *>(tail), tail_len}};
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = tail_len ? 3 : (len ? 2 : 1);
    alignas(cmsghdr) unsigned char ctl[CMSG_SPACE(sizeof(int) * kMaxFds)];
    attach_fds(mh, ctl, fds, nfds);
    for (;;) {
        ssize_t n = ::sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
        if (n >= 0)
            return 0; // a seqpacket message goes whole or not at all
        if (errno != EINTR)
            return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
}

void Msg::close_fds() {
    for (size_t i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            ::close(fds[i]);
    nfds = 0;
}

int recv_msg(int sock, Msg &m, int flags) {
    m.nfds = 0;
    m.len = 0;
    iovec iov[2] = {{&m.head, sizeof m.head}, {m.data, sizeof m.data}};
    alignas(cmsghdr) unsigned char ctl[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = 2;
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    ssize_t n;
    do
        n = ::recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    if (n == 0)
        return -EPIPE;
    for (cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && m.nfds < kMaxFds; i++)
            std::memcpy(&m.fds[m.nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    bool bad = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || static_cast<size_t>(n) < sizeof m.head ||
               m.head.magic != kMagic || m.head.len != static_cast<size_t>(n) - sizeof m.head;
    if (bad) {
        m.close_fds();
        return -EPROTO;
    }
    m.len = m.head.len;
    return 0;
}

int wait_readable(int sock, int timeout_ms) {
    pollfd p{sock, POLLIN, 0};
    for (;;) {
        int r = ::poll(&p, 1, timeout_ms);
        if (r > 0)
            return 0;
        if (r == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

} // namespace weir::handover
