#include "uring/buf_ring.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace weir {

BufRing::~BufRing() { destroy(); }

int BufRing::init(io_uring *ring, uint16_t group, uint32_t count, uint32_t size) {
    ring_ = ring;
    group_ = group;
    count_ = count;
    size_ = size;
    // The ring itself must be page-aligned: the kernel pins its pages.
    ring_bytes_ = count * sizeof(io_uring_buf);
    void *mem = ::mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return -errno;
    br_ = static_cast<io_uring_buf_ring *>(mem);
    // The buffers are plain memory, touched only as the kernel fills them;
    // mapped (page-aligned) so drop() can give their pages back.
    void *bufs = ::mmap(nullptr, static_cast<size_t>(count) * size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (bufs == MAP_FAILED) {
        destroy();
        return -ENOMEM;
    }
    base_ = static_cast<char *>(bufs);
    io_uring_buf_reg reg;
    std::memset(&reg, 0, sizeof reg);
    reg.ring_addr = reinterpret_cast<uintptr_t>(br_);
    reg.ring_entries = count;
    reg.bgid = group;
    int rc = io_uring_register_buf_ring(ring, &reg, 0);
    if (rc < 0) {
        ring_ = nullptr; // not registered: nothing to unregister
        destroy();
        return rc;
    }
    io_uring_buf_ring_init(br_);
    mask_ = io_uring_buf_ring_mask(count);
    out_ = count;
    for (uint32_t i = 0; i < count; i++)
        give(static_cast<uint16_t>(i));
    publish();
    return 0;
}

void BufRing::destroy() {
    if (ring_ && br_)
        io_uring_unregister_buf_ring(ring_, group_);
    ring_ = nullptr;
    if (br_)
        ::munmap(br_, ring_bytes_);
    br_ = nullptr;
    if (base_)
        ::munmap(base_, static_cast<size_t>(count_) * size_);
    base_ = nullptr;
}

size_t BufRing::drop() {
    if (!base_ || !touched_)
        return 0;
    size_t n = static_cast<size_t>(count_) * size_;
    if (::madvise(base_, n, MADV_DONTNEED) != 0)
        return 0;
    touched_ = false;
    return n;
}

} // namespace weir
