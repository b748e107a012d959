// What ThreadSanitizer cannot see and must be told (make test TSAN=1,
// docs/reliability.md "Races"). Nothing here exists outside a TSan build.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define WEIR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEIR_TSAN 1
#endif
#endif

#ifdef WEIR_TSAN
extern "C" void __sanitizer_syscall_pre_impl_close(long fd);
#endif

namespace weir {

// TSan models a descriptor's life (created, used, closed) from the calls it
// intercepts, and a close that io_uring does (IORING_OP_CLOSE) is not one of
// them. It would keep the closed socket's history under its number, and when
// the kernel hands that number out again (a multishot accept, on another
// worker) report the new socket's first recv as racing with the old one's
// accept4 on the thread that had it: a false race between two different
// sockets, seen in demo_adaptive.sh's switches under TSAN=1. The sanitizers'
// syscall hook tells it of the close, as close(2) would have.
inline void tsan_fd_closed(int fd) {
#ifdef WEIR_TSAN
    __sanitizer_syscall_pre_impl_close(fd);
#else
    (void)fd;
#endif
}

} // namespace weir
