// A private network namespace for one test binary: its own loopback, port
// space, TIME_WAIT table and net.* sysctls, so a test may set a sysctl or
// make hundreds of thousands of connections without touching the host's.
// Call enter_private_net() in main, before any thread (threads made later
// live in it). Needs CAP_SYS_ADMIN (we run as root; so does CI).
#pragma once

#include <string>

namespace testnet {

// "" when the namespace was made and its lo is up, else why not (the
// binary then stays in the host's namespace).
std::string enter_private_net();
// Writes value to /proc/sys/<name> ("net/ipv4/tcp_migrate_req"); false on error.
bool write_sysctl(const char *name, const char *value);
// A TcpExt counter of this namespace (/proc/net/netstat: a line of names,
// then one of values), or -1 when it cannot be read.
long long tcpext(const char *name);

} // namespace testnet
