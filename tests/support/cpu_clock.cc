#include "support/cpu_clock.h"

#include <time.h>
#include <unistd.h>

#include "support/net.h"

namespace testnet {

namespace {

int64_t clock_ns(clockid_t id) {
    timespec ts{};
    if (clock_gettime(id, &ts) < 0)
        return -1;
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

} // namespace

int64_t process_cpu_ns(pid_t pid) {
    clockid_t id;
    if (clock_getcpuclockid(pid, &id) != 0)
        return -1;
    return clock_ns(id);
}

int64_t other_threads_cpu_ns() { return clock_ns(CLOCK_PROCESS_CPUTIME_ID) - clock_ns(CLOCK_THREAD_CPUTIME_ID); }

int64_t busy_loop_cpu_ns(int ms) {
    int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    int64_t until = now_ms() + ms;
    volatile uint64_t x = 0;
    while (now_ms() < until)
        for (int i = 0; i < 1000; i++)
            x = x + 1;
    return clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
}

} // namespace testnet
