// The host's side of cfg.on_conn (docs/api.md §5.11) for the integration
// tests: a ledger of every OPEN and CLOSE told, by conn_id, and its
// verdict against the clients' own ports and weir_metrics.closes.
// test_conn_events.cc and test_conn_event_reasons.cc share it.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "support/net.h"

namespace connledger {

using testnet::Client;

struct Entry {
    int opens = 0, closes = 0;
    bool close_before_open = false;
    uint32_t reason = 0;
    uint16_t open_port = 0, close_port = 0;
    uint32_t open_ip = 0, close_ip = 0; // IPv4, host order (0: another family)
    uint32_t worker = 0;
};

struct Ledger {
    std::mutex mu;
    std::map<uint64_t, Entry> by_id;
    std::thread::id loop_thread; // driven: the polling thread; inline: set by the handler
    bool wrong_thread = false;
    int calls = 0;
};

inline uint32_t ip_of(const sockaddr *sa, socklen_t len) {
    if (!sa || len < sizeof(sockaddr_in) || sa->sa_family != AF_INET)
        return 0;
    return ntohl(reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr);
}

inline uint16_t port_of(const sockaddr *sa, socklen_t len) {
    if (!sa || len < sizeof(sockaddr_in) || sa->sa_family != AF_INET)
        return 0;
    return ntohs(reinterpret_cast<const sockaddr_in *>(sa)->sin_port);
}

inline void on_conn(void *user, weir_worker *, uint32_t worker, uint64_t id, uint32_t event, uint32_t reason,
             const sockaddr *peer, socklen_t len) {
    auto *l = static_cast<Ledger *>(user);
    std::lock_guard<std::mutex> g(l->mu);
    l->calls++;
    if (l->loop_thread != std::thread::id() && l->loop_thread != std::this_thread::get_id())
        l->wrong_thread = true;
    Entry &e = l->by_id[id];
    e.worker = worker;
    if (event == WEIR_CONN_OPEN) {
        e.opens++;
        e.open_port = port_of(peer, len);
        e.open_ip = ip_of(peer, len);
    } else if (event == WEIR_CONN_CLOSE) {
        if (e.opens == 0)
            e.close_before_open = true;
        e.closes++;
        e.reason = reason;
        e.close_port = port_of(peer, len);
        e.close_ip = ip_of(peer, len);
    }
}

inline uint16_t local_port(const Client &c) {
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    ::getsockname(c.fd, reinterpret_cast<sockaddr *>(&sa), &len);
    return ntohs(sa.sin_port);
}

// The ledger's verdict: "" when every client has exactly one OPEN then one
// CLOSE with the reason and port expected, nothing else was told, and the
// closes by reason equal the metrics'; else what is wrong.
inline std::string check(Ledger &l, const std::map<uint16_t, uint32_t> &want, const weir_metrics &m) {
    std::lock_guard<std::mutex> g(l.mu);
    if (l.wrong_thread)
        return "an event off the worker's thread";
    if (l.by_id.size() != want.size())
        return "ids " + std::to_string(l.by_id.size()) + ", clients " + std::to_string(want.size());
    uint64_t by_reason[WEIR_CLOSE_REASONS] = {};
    std::map<uint16_t, int> seen;
    for (auto &[id, e] : l.by_id) {
        if (e.opens != 1 || e.closes != 1 || e.close_before_open)
            return "id " + std::to_string(id) + ": " + std::to_string(e.opens) + " opens, " +
                   std::to_string(e.closes) + " closes";
        if (e.open_port != e.close_port)
            return "id " + std::to_string(id) + ": peer changed";
        auto w = want.find(e.open_port);
        if (w == want.end())
            return "id " + std::to_string(id) + ": no client at port " + std::to_string(e.open_port);
        if (w->second != e.reason)
            return "port " + std::to_string(e.open_port) + ": reason " + std::to_string(e.reason) + ", want " +
                   std::to_string(w->second);
        seen[e.open_port]++;
        by_reason[e.reason]++;
    }
    if (seen.size() != want.size())
        return "a client told twice";
    for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
        if (by_reason[r] != m.closes[r])
            return "reason " + std::to_string(r) + ": " + std::to_string(by_reason[r]) + " told, " +
                   std::to_string(m.closes[r]) + " counted";
    return "";
}

} // namespace connledger
