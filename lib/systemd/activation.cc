// weir_engine_listen_systemd (docs/upgrade-systemd.md): socket activation as
// sd_listen_fds(unset=1) reads it, and the connections a previous process
// of the service left in the fd store (fdstore.cc), adopted as a hot
// upgrade's successor adopts them (lib/handover/take_over.cc).
//
// The store passes its fds in no promised order, and names per message, so
// an image finds its connection by the socket's inode (the same kernel
// socket in both processes), checked against the peer it recorded.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "systemd/image_file.h"
#include "systemd/notify.h"
#include "systemd/systemd.h"

namespace weir::systemd {

namespace {

constexpr int kListenFdsStart = 3; // SD_LISTEN_FDS_START

int sockopt(int fd, int opt) {
    int v = -1;
    socklen_t len = sizeof v;
    return ::getsockopt(fd, SOL_SOCKET, opt, &v, &len) == 0 ? v : -1;
}

bool tcp(int fd) {
    int d = sockopt(fd, SO_DOMAIN);
    return sockopt(fd, SO_TYPE) == SOCK_STREAM && (d == AF_INET || d == AF_INET6);
}

bool tcp_listener(int fd) { return tcp(fd) && sockopt(fd, SO_ACCEPTCONN) == 1; }

// The connection at fd is the one the image recorded (family, port, address).
bool same_peer(int fd, const ConnImage &img) {
    if (img.peer_len == 0)
        return true; // nothing recorded to compare
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&a), &len) < 0 || a.ss_family != img.peer.ss_family)
        return false;
    if (a.ss_family == AF_INET) {
        auto *x = reinterpret_cast<const sockaddr_in *>(&a), *y = reinterpret_cast<const sockaddr_in *>(&img.peer);
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    auto *x = reinterpret_cast<const sockaddr_in6 *>(&a), *y = reinterpret_cast<const sockaddr_in6 *>(&img.peer);
    return a.ss_family == AF_INET6 && x->sin6_port == y->sin6_port &&
           std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
}

// A whole decimal number, or -1.
long long parse_num(const char *s) {
    if (!s || !*s)
        return -1;
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(s, &end, 10);
    return (errno || *end || v < 0) ? -1 : v;
}

std::string take_env(const char *name, bool *set) {
    const char *v = std::getenv(name);
    *set = v != nullptr;
    std::string s = v ? v : "";
    ::unsetenv(name);
    return s;
}

// What the environment passed, sorted by what weir makes of it.
struct Passed {
    std::vector<int> listeners;
    std::map<uint64_t, int> conns; // by socket inode
    std::vector<int> images;
    std::set<std::string> store_names; // to remove from the store once taken
    uint64_t closed = 0;
};

void sort_fd(Passed &p, int fd, const std::string &fdname, const char *want, std::set<uint64_t> &seen) {
    if (fdname == kImagesName) {
        p.images.push_back(fd);
        p.store_names.insert(fdname);
        return;
    }
    if (fdname.compare(0, sizeof kConnPrefix - 1, kConnPrefix) == 0) {
        p.store_names.insert(fdname);
        uint64_t ino = socket_ino(fd);
        if (ino && tcp(fd) && !p.conns.count(ino)) {
            p.conns[ino] = fd;
        } else {
            ::close(fd); // not a connection, or the same one twice
            if (!ino || !tcp(fd))
                p.closed++;
        }
        return;
    }
    bool named = !want || fdname == want || fdname == kListenName;
    if (!named || !tcp_listener(fd))
        return; // not ours: left open for the host (close-on-exec)
    // A socket unit's socket and the store's copy of it are one listener.
    if (!seen.insert(socket_ino(fd)).second) {
        ::close(fd);
        return;
    }
    p.listeners.push_back(fd);
}

// The store's copies of what this process took: removed, else a
// connection this process closes stays open in the store (no FIN).
void forget(const std::set<std::string> &names) {
    if (names.empty())
        return;
    Notify n;
    if (n.open() < 0)
        return;
    for (const std::string &name : names)
        n.send("FDSTOREREMOVE=1\nFDNAME=" + name, nullptr, 0);
}

void close_conns(Passed &p) {
    for (auto &c : p.conns) {
        ::close(c.second);
        p.closed++;
    }
    p.conns.clear();
}

} // namespace

int listen_systemd(Engine &e, const char *name, weir_systemd_stats &st) {
    if (e.state() != Engine::State::Created)
        return WEIR_E_STATE;
    bool pid_set, fds_set, names_set;
    std::string pid_s = take_env("LISTEN_PID", &pid_set);
    std::string fds_s = take_env("LISTEN_FDS", &fds_set);
    std::string names_s = take_env("LISTEN_FDNAMES", &names_set);
    if (!pid_set || !fds_set)
        return -ENOENT;
    long long pid = parse_num(pid_s.c_str()), n = parse_num(fds_s.c_str());
    if (pid < 0 || n < 0 || n > INT_MAX - kListenFdsStart)
        return -EINVAL;
    if (pid != ::getpid())
        return -ENOENT; // another process's (a parent's that forgot to unset): not ours to touch
    if (n == 0)
        return -ENOENT;
    st.fds = static_cast<uint32_t>(n);
    std::vector<std::string> names;
    for (size_t at = 0; names_set;) {
        size_t colon = names_s.find(':', at);
        names.push_back(names_s.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
        if (colon == std::string::npos)
            break;
        at = colon + 1;
    }
    Passed p;
    std::set<uint64_t> seen;
    for (int i = 0; i < n; i++) {
        int fd = kListenFdsStart + i;
        int fl = ::fcntl(fd, F_GETFD);
        if (fl < 0)
            continue; // not open after all
        ::fcntl(fd, F_SETFD, fl | FD_CLOEXEC); // as sd_listen_fds: not inherited further
        sort_fd(p, fd, static_cast<size_t>(i) < names.size() ? names[i] : "unknown", name, seen);
    }
    // The images, all read before any is posted: a file of another protocol
    // refuses (its connections close below, the listeners serve on).
    std::vector<StoredImage> imgs;
    for (int fd : p.images) {
        std::vector<StoredImage> one;
        int rc = read_images(fd, one);
        ::close(fd);
        if (rc < 0) {
            st.image_error = rc; // their fds close below, as fds without an image
            continue;
        }
        for (StoredImage &si : one)
            imgs.push_back(std::move(si));
    }
    if (p.listeners.empty()) {
        close_conns(p);
        st.closed = p.closed + imgs.size();
        forget(p.store_names);
        return -ENOENT;
    }
    uint32_t nl = static_cast<uint32_t>(p.listeners.size());
    if (int rc = e.listen_fds(p.listeners.data(), p.listeners.size()); rc < 0) {
        close_conns(p);
        st.closed = p.closed + imgs.size();
        forget(p.store_names);
        return rc; // the listeners are closed: the store or a socket unit keeps its own
    }
    auto ledger = std::make_shared<Ledger>();
    ledger->source_alive = false; // nothing goes back: a refused image closes here
    uint32_t nw = e.worker_count(), next = 0;
    for (StoredImage &si : imgs) {
        auto it = p.conns.find(si.ino);
        if (it == p.conns.end() || !same_peer(it->second, si.node->img)) {
            p.closed++; // its fd did not come (the store was full, or the peer hung up)
            continue;
        }
        int fd = it->second;
        p.conns.erase(it);
        int fl = ::fcntl(fd, F_GETFL);
        if (fl >= 0)
            ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        ImageNode *node = si.node.release();
        node->img.fd = fd;
        node->ledger = ledger;
        e.worker(next++ % nw)->post_image(node);
        st.connections++;
    }
    close_conns(p); // fds without an image
    st.closed = p.closed;
    st.listeners = nl;
    forget(p.store_names);
    return static_cast<int>(nl);
}

} // namespace weir::systemd
