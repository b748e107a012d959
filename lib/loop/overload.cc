#include "loop/overload.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace weir {

namespace {

uint32_t share(uint64_t cur, uint64_t mark) {
    if (mark == 0)
        return 0;
    // cur * 1000 / mark without overflow for any cur: a reading past 4e15
    // is full whatever the mark.
    if (cur > UINT64_MAX / 1000)
        return UINT32_MAX;
    uint64_t pm = cur * 1000 / mark;
    return pm > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(pm);
}

} // namespace

uint32_t overload_pressure(const OverloadMarks &m, const OverloadReadings &r) {
    uint32_t p = share(r.inflight, m.inflight);
    if (uint32_t q = share(r.conns, m.conns); q > p)
        p = q;
    if (uint32_t q = share(r.fds, m.fds); q > p)
        p = q;
    if (uint32_t q = share(r.mem, m.mem); q > p)
        p = q;
    return p;
}

uint8_t overload_step(uint8_t level, uint32_t pressure) {
    while (level > OVERLOAD_NONE && pressure < kOverloadRelease[level])
        level--;
    while (level + 1 < kOverloadLevels && pressure >= kOverloadEngage[level + 1])
        level++;
    return level;
}

uint8_t Overload::update(const OverloadReadings &r) {
    if (!marks_.any())
        return level_;
    uint8_t next = overload_step(level_, overload_pressure(marks_, r));
    if (next > level_)
        engaged_ += next - level_;
    level_ = next;
    return level_;
}

uint32_t overload_batch(uint8_t level, uint32_t accept_batch) {
    if (level >= OVERLOAD_PAUSE_ACCEPT)
        return 0;
    if (level < OVERLOAD_SHRINK_ACCEPT)
        return accept_batch;
    if (accept_batch == 0)
        return 4;
    return accept_batch / 4 ? accept_batch / 4 : 1;
}

int64_t count_open_fds() {
    // getdents64 on /proc/self/fd: about 1 µs per 100 descriptors, so the
    // loop samples it on a timer (Engine::overload_fds), not per pass.
    int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return -1;
    alignas(8) char buf[8192];
    int64_t n = 0;
    for (;;) {
        long got = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (got <= 0)
            break;
        for (long off = 0; off < got;) {
            auto *d = reinterpret_cast<struct dirent64 *>(buf + off);
            if (d->d_name[0] != '.')
                n++;
            off += d->d_reclen;
        }
    }
    ::close(dir);
    return n - 1; // the directory's own descriptor
}

} // namespace weir
