#include "support/crowd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace testnet {

namespace {

// Whether a non-blocking connect has completed: 1 yes, 0 not yet, -1 failed (*e: why).
int connect_done(int fd, int *e) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    *e = err;
    if (err == EINPROGRESS || err == EALREADY)
        return 0;
    return err == 0 ? 1 : -1;
}

} // namespace

int Crowd::connect_all(uint16_t port, int n, int ms) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    size_t first = peers.size();
    for (int i = 0; i < n; i++) {
        Peer p;
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            break;
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        p.c = Client(fd);
        int rc = ::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
        if (rc == 0)
            p.connected = true;
        else if (errno != EINPROGRESS)
            p.closed = true, p.err = errno;
        peers.push_back(std::move(p));
    }
    int64_t until = now_ms() + ms;
    std::vector<pollfd> pf;
    std::vector<size_t> idx;
    for (;;) {
        pf.clear();
        idx.clear();
        for (size_t i = first; i < peers.size(); i++)
            if (!peers[i].connected && !peers[i].closed) {
                pf.push_back(pollfd{peers[i].c.fd, POLLOUT, 0});
                idx.push_back(i);
            }
        int64_t left = until - now_ms();
        if (pf.empty() || left <= 0)
            break;
        int r = ::poll(pf.data(), pf.size(), left > 50 ? 50 : static_cast<int>(left));
        if (r <= 0)
            continue;
        for (size_t k = 0; k < pf.size(); k++) {
            if (!pf[k].revents)
                continue;
            int d = connect_done(pf[k].fd, &peers[idx[k]].err);
            if (d > 0)
                peers[idx[k]].connected = true;
            else if (d < 0)
                peers[idx[k]].closed = true;
        }
    }
    int done = 0;
    for (size_t i = first; i < peers.size(); i++)
        done += peers[i].connected;
    return done;
}

int Crowd::send_all(const std::string &req, int ms) {
    int64_t until = now_ms() + ms;
    int sent = 0;
    for (Peer &p : peers) {
        if (!p.connected || p.closed || p.sent_ms || p.c.fd < 0)
            continue;
        size_t off = 0;
        while (off < req.size()) {
            ssize_t n = ::send(p.c.fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
            if (n > 0) {
                off += static_cast<size_t>(n);
                continue;
            }
            int64_t left = until - now_ms();
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno != EAGAIN)
                break;
            if (left <= 0)
                break;
            pollfd pf{p.c.fd, POLLOUT, 0};
            ::poll(&pf, 1, static_cast<int>(left));
        }
        if (off < req.size())
            continue; // the socket failed, or the time ran out: left unsent
        p.sent_ms = now_ms();
        sent++;
    }
    return sent;
}

void Crowd::pump(int ms, int quiet_ms, bool close_on_answer, const std::string *req) {
    int64_t end = now_ms() + ms;
    int64_t last = now_ms();
    std::vector<pollfd> pf;
    std::vector<size_t> idx;
    for (;;) {
        int64_t now = now_ms();
        if (now >= end || now - last >= quiet_ms)
            return;
        pf.clear();
        idx.clear();
        for (size_t i = 0; i < peers.size(); i++) {
            Peer &p = peers[i];
            if (p.c.fd < 0 || p.closed)
                continue;
            pf.push_back(pollfd{p.c.fd, static_cast<short>(p.connected ? POLLIN : POLLOUT), 0});
            idx.push_back(i);
        }
        if (pf.empty())
            return;
        int64_t wait = end - now;
        if (quiet_ms - (now - last) < wait)
            wait = quiet_ms - (now - last);
        int r = ::poll(pf.data(), pf.size(), wait > 50 ? 50 : static_cast<int>(wait));
        if (r <= 0)
            continue;
        now = now_ms();
        for (size_t k = 0; k < pf.size(); k++) {
            if (!pf[k].revents)
                continue;
            Peer &p = peers[idx[k]];
            if (!p.connected) {
                int d = connect_done(p.c.fd, &p.err);
                if (d > 0) {
                    p.connected = true;
                    last = now;
                    if (req && ::send(p.c.fd, req->data(), req->size(), MSG_NOSIGNAL) ==
                                   static_cast<ssize_t>(req->size()))
                        p.sent_ms = now;
                } else if (d < 0) {
                    p.closed = true;
                    p.c.close();
                }
                continue;
            }
            char tmp[16384];
            ssize_t n = ::recv(p.c.fd, tmp, sizeof tmp, MSG_DONTWAIT);
            if (n > 0) {
                last = now;
                p.c.buf.append(tmp, static_cast<size_t>(n));
                if (!p.answered) {
                    Response got = take_response(p.c);
                    if (got.status) {
                        p.answered = true;
                        p.status = got.status;
                        p.body = std::move(got.body);
                        p.answered_ms = now;
                        if (close_on_answer)
                            p.c.close();
                    }
                }
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                last = now;
                p.closed = true;
                p.err = n == 0 ? 0 : errno;
                p.c.close();
            }
        }
    }
}

int Crowd::count_connected() const {
    int n = 0;
    for (const Peer &p : peers)
        n += p.connected;
    return n;
}

int Crowd::count_answered() const {
    int n = 0;
    for (const Peer &p : peers)
        n += p.answered;
    return n;
}

int Crowd::count_closed_unanswered() const {
    int n = 0;
    for (const Peer &p : peers)
        n += p.closed && !p.answered;
    return n;
}

int Crowd::close_answered() {
    int n = 0;
    for (Peer &p : peers)
        if (p.answered && p.c.fd >= 0) {
            p.c.close();
            n++;
        }
    return n;
}

} // namespace testnet
