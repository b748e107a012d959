#include "net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "cmocka_cxx.h"

namespace testnet {

int64_t now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(int ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

Client &Client::operator=(Client &&o) noexcept {
    if (this != &o) {
        close();
        fd = o.fd;
        buf = std::move(o.buf);
        o.fd = -1;
    }
    return *this;
}

Client::~Client() { close(); }

void Client::close() {
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

Client connect_to(uint16_t port, int rcvbuf) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return Client();
    if (rcvbuf > 0)
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0) {
        ::close(fd);
        return Client();
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return Client(fd);
}

bool send_all(Client &c, const std::string &bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
        ssize_t n = ::send(c.fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        off += static_cast<size_t>(n);
    }
    return true;
}

namespace {

// Reads more into c.buf within the deadline. 1: got bytes, 0: EOF, -1: timeout/error.
int fill(Client &c, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return -1;
        pollfd p{c.fd, POLLIN, 0};
        int r = ::poll(&p, 1, static_cast<int>(left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        char tmp[16384];
        ssize_t n = ::recv(c.fd, tmp, sizeof tmp, 0);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return 0; // reset counts as closed
        }
        if (n == 0)
            return 0;
        c.buf.append(tmp, static_cast<size_t>(n));
        return 1;
    }
}

} // namespace

std::string Response::header(const char *name) const {
    size_t pos = head.find("\r\n");
    size_t nl = std::strlen(name);
    while (pos != std::string::npos && pos + 2 < head.size()) {
        size_t start = pos + 2;
        size_t end = head.find("\r\n", start);
        if (end == std::string::npos)
            break;
        if (end - start > nl && head[start + nl] == ':' && strncasecmp(head.data() + start, name, nl) == 0) {
            size_t v = start + nl + 1;
            while (v < end && (head[v] == ' ' || head[v] == '\t'))
                v++;
            return head.substr(v, end - v);
        }
        pos = end;
    }
    return "";
}

Response read_response(Client &c, int timeout_ms) {
    Response r;
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        size_t end = c.buf.find("\r\n\r\n");
        if (end != std::string::npos) {
            r.head = c.buf.substr(0, end + 4);
            if (r.head.compare(0, 9, "HTTP/1.1 ") != 0 && r.head.compare(0, 9, "HTTP/1.0 ") != 0)
                return Response{};
            int status = std::atoi(r.head.c_str() + 9);
            std::string te = r.header("Transfer-Encoding");
            std::string cl = r.header("Content-Length");
            size_t body_at = end + 4;
            if (status >= 100 && status < 200) { // interim: no body
                c.buf.erase(0, body_at);
                r.status = status;
                return r;
            }
            if (!te.empty()) {
                // chunked: decode in place once the terminating chunk is here
                size_t p = body_at;
                std::string body;
                bool done = false;
                for (;;) {
                    size_t le = c.buf.find("\r\n", p);
                    if (le == std::string::npos)
                        break;
                    size_t sz = std::strtoul(c.buf.c_str() + p, nullptr, 16);
                    if (sz == 0) {
                        size_t fin = c.buf.find("\r\n\r\n", le);
                        if (fin == std::string::npos && c.buf.compare(le, 4, "\r\n\r\n") != 0)
                            break;
                        c.buf.erase(0, (fin == std::string::npos ? le : fin) + 4);
                        done = true;
                        break;
                    }
                    if (c.buf.size() < le + 2 + sz + 2)
                        break;
                    body.append(c.buf, le + 2, sz);
                    p = le + 2 + sz + 2;
                }
                if (done) {
                    r.status = status;
                    r.body = body;
                    return r;
                }
            } else {
                size_t len = cl.empty() ? 0 : std::strtoul(cl.c_str(), nullptr, 10);
                if (c.buf.size() >= body_at + len) {
                    r.body = c.buf.substr(body_at, len);
                    c.buf.erase(0, body_at + len);
                    r.status = status;
                    return r;
                }
            }
        }
        if (fill(c, deadline) <= 0)
            return Response{};
    }
}

Response take_response(Client &c) {
    Response r;
    size_t end = c.buf.find("\r\n\r\n");
    if (end == std::string::npos)
        return r;
    r.head = c.buf.substr(0, end + 4);
    std::string cl = r.header("Content-Length");
    size_t len = cl.empty() ? 0 : std::strtoul(cl.c_str(), nullptr, 10);
    if (c.buf.size() < end + 4 + len)
        return Response{};
    r.body = c.buf.substr(end + 4, len);
    c.buf.erase(0, end + 4 + len);
    r.status = r.head.size() > 12 ? std::atoi(r.head.c_str() + 9) : 0;
    return r;
}

bool read_some(Client &c) {
    char tmp[16384];
    ssize_t n = ::recv(c.fd, tmp, sizeof tmp, MSG_DONTWAIT);
    if (n > 0) {
        c.buf.append(tmp, static_cast<size_t>(n));
        return true;
    }
    return n < 0 && (errno == EAGAIN || errno == EINTR);
}

bool wait_closed(Client &c, int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        int r = fill(c, deadline);
        if (r == 0)
            return true;
        if (r < 0)
            return false;
    }
}

size_t Seen::full() const {
    size_t h = data.find("\r\n\r\n");
    size_t cl = data.find("Content-Length: ");
    if (h == std::string::npos || cl == std::string::npos || cl > h)
        return 0;
    return h + 4 + std::stoul(data.substr(cl + 16));
}

Seen read_slowly(int fd, int timeout_ms) {
    Seen s;
    char buf[4096];
    int64_t until = now_ms() + timeout_ms;
    while (now_ms() < until) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0) {
            s.end = 0;
            return s;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            s.end = errno;
            return s;
        }
        s.data.append(buf, static_cast<size_t>(n));
        sleep_ms(1);
    }
    s.end = ETIMEDOUT;
    return s;
}

bool stays_silent(Client &c, int ms) {
    pollfd p{c.fd, POLLIN, 0};
    int r = ::poll(&p, 1, ms);
    return r == 0;
}

std::string get(const std::string &path, const std::string &extra) {
    return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

namespace {

// WEIR_TEST_BACKEND's backend, from the library's own table; unset or empty
// is epoll. A name no backend has ends the binary with 2: run as epoll it
// would pass under the other backend's label (tests/scripts/test_backends.sh).
uint32_t backend_from_env() {
    const char *b = std::getenv("WEIR_TEST_BACKEND");
    if (!b || !*b)
        return WEIR_BACKEND_EPOLL;
    int id = weir_backend_by_name(b);
    if (id < 0) {
        std::fprintf(stderr, "WEIR_TEST_BACKEND=%s names no backend of this libweir (its names:", b);
        for (uint32_t i = 1; weir_backend_name(i); i++)
            std::fprintf(stderr, " %s", weir_backend_name(i));
        std::fprintf(stderr, ")\n");
        std::_Exit(2);
    }
    return static_cast<uint32_t>(id);
}

// Checked as the binary starts, so that a test file that never asks
// test_backend() fails too instead of running on epoll.
const uint32_t g_env_backend = backend_from_env();

} // namespace

uint32_t test_backend() { return g_env_backend; }

const char *test_backend_name() { return weir_backend_name(test_backend()); }

int create(const weir_config &cfg, weir_engine **out) {
    int rc = weir_engine_create(&cfg, out);
    // Rings that cannot be had for memory (a RLIMIT_MEMLOCK that other
    // engines, this test's earlier ones included, still hold) come back as
    // those are torn down: retried for a bounded time, then reported.
    for (int64_t until = now_ms() + 5000; rc == -ENOMEM && cfg.backend == WEIR_BACKEND_URING && now_ms() < until;) {
        sleep_ms(50);
        rc = weir_engine_create(&cfg, out);
    }
    if (rc == WEIR_E_UNAVAILABLE) {
        // A counted skip with its reason, never a pass.
        print_message("backend %s: %s\n", test_backend_name(), weir_strerror(rc));
        skip();
    }
    return rc;
}

int engine_port(weir_engine *e, uint16_t *port) {
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int rc = weir_engine_addr(e, &ss, &len);
    if (rc == 0)
        *port = ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
    return rc;
}

int Server::start(const weir_config &cfg) {
    int rc = create(cfg, &e);
    if (rc < 0)
        return rc;
    rc = weir_engine_listen(e);
    if (rc < 0)
        return rc;
    if ((rc = engine_port(e, &port)) < 0)
        return rc;
    if (cfg.mode == WEIR_MODE_INLINE)
        rc = weir_engine_start(e);
    return rc;
}

weir_metrics Server::metrics() const {
    weir_metrics m;
    std::memset(&m, 0, sizeof m);
    m.size = sizeof m;
    weir_engine_metrics(e, &m);
    return m;
}

uint64_t Server::wait_closes(uint32_t reason, uint64_t want, int ms) const {
    int64_t until = now_ms() + ms;
    while (metrics().closes[reason] < want && now_ms() < until)
        sleep_ms(5);
    return metrics().closes[reason];
}

int Server::shutdown(int64_t grace_ns) { return weir_engine_shutdown(e, grace_ns); }

Server::~Server() { weir_engine_destroy(e); }

weir_config config(uint32_t workers, uint32_t mode, weir_handler_fn fn, void *user) {
    weir_config c;
    weir_config_init(&c);
    c.host = "127.0.0.1";
    c.port = 0;
    c.backend = test_backend();
    c.workers = workers;
    c.mode = mode;
    c.on_request = fn;
    c.user = user;
    return c;
}

std::string str(weir_str_t s) { return s.len ? std::string(s.ptr, s.len) : std::string(); }

long query_int(const weir_request *r, const char *name, long def) {
    std::string q = str(r->query);
    std::string key = std::string(name) + "=";
    size_t p = q.find(key);
    if (p == std::string::npos || (p != 0 && q[p - 1] != '&'))
        return def;
    return std::strtol(q.c_str() + p + key.size(), nullptr, 10);
}

int answer(weir_exchange *ex, int status, const std::string &body, uint32_t flags) {
    return weir_respond(ex, status, nullptr, 0, body.data(), body.size(), flags);
}

} // namespace testnet
