// The kernel's listener-close race, measured and attributed
// (docs/reliability.md, "The listener-close race").
//
// A handshake whose final ACK the kernel is processing on a listener at the
// moment that listener closes is reset: the kernel checked the listener was
// listening, built the connection, and then finds the accept queue closed
// (inet_csk_reqsk_queue_add). net.ipv4.tcp_migrate_req moves what is queued
// and what is still half-open, not a connection caught between the two, and
// no listener code can see it. test_listener_close_race.cc shows that every
// reset of a connecting client under a switch storm is such a handshake and
// that none happens without listener closes. The soak uses the same rule to
// tell these resets from any other client error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace closerace {

// CLOCK_MONOTONIC in microseconds: the clock the client's connects and the
// workers' listener closes are both stamped with.
int64_t now_us();

// Records every listener close (LingerHooks::on_event, LingerEvent::Close)
// into a fixed table made at load time (no allocation while a leak baseline
// stands). install() replaces any on_event hook; clear() forgets the record.
void install();
void uninstall();
void clear();
size_t closes();

// A connection begun at started_us (its connect(2) call) and lost before
// its answer is the race's when a listener's close was stamped within
// [started_us - 0.5 ms, started_us + 5 ms]. On loopback the handshake runs
// inside connect(2), so the race happens within microseconds of
// started_us, while a close(2) is under way; the close is stamped after
// close(2) returns (measured: 18 to 340 us after started_us, on a quiet
// machine; the 5 ms allow for a worker preempted before its stamp). With
// listener closes every few seconds (the soak), a loss the engine caused
// would fall in such a window by chance about once in 250.
bool attributed(int64_t started_us);
// How many of these (started, seen) pairs are attributed (seen is kept for
// the reports).
size_t count_attributed(const std::vector<std::pair<int64_t, int64_t>> &resets);

} // namespace closerace
