// CPU clocks for the "no spin" checks of the reliability tests: what a
// process or the engine's threads used over a window, and the busy loop a
// spinning loop would amount to, measured on this machine in the same run
// (2 shared cores: a busy loop gets what the others leave it).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace testnet {

// CPU time (ns) process pid has used so far, every thread of it (its CPU clock).
int64_t process_cpu_ns(pid_t pid);
// CPU time (ns) of this process's threads other than the calling one.
int64_t other_threads_cpu_ns();
// The CPU (ns) a thread spinning for ms of wall time gets right now: what a
// spinning loop would burn, the reference a loop that must not spin is
// judged against.
int64_t busy_loop_cpu_ns(int ms);

} // namespace testnet
