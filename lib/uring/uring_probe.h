// What this kernel's io_uring can do, found once per process by trying each
// feature (never by the kernel's version number: distributions backport, and
// liburing here is older than the kernel). docs/uring.md lists what each
// feature buys.
#pragma once

#include <cstdint>

namespace weir {

// uapi constants newer than liburing 2.3's headers, by their kernel names.
namespace uapi {
inline constexpr unsigned kFeatRecvSendBundle = 1u << 14; // IORING_FEAT_RECVSEND_BUNDLE
inline constexpr unsigned kFeatMinTimeout = 1u << 15;     // IORING_FEAT_MIN_TIMEOUT
inline constexpr unsigned kAcceptDontWait = 1u << 1;      // IORING_ACCEPT_DONTWAIT
inline constexpr unsigned kAcceptPollFirst = 1u << 2;     // IORING_ACCEPT_POLL_FIRST
inline constexpr unsigned kPbufRingInc = 2;               // IOU_PBUF_RING_INC
inline constexpr unsigned kRegisterNapi = 27;             // IORING_REGISTER_NAPI
inline constexpr unsigned kUnregisterNapi = 28;           // IORING_UNREGISTER_NAPI
} // namespace uapi

struct UringCaps {
    // 0: the engine can run on io_uring; else why not (WEIR_E_UNAVAILABLE's
    // reason, logged by the port).
    const char *missing = nullptr;
    uint64_t probed = 0; // WEIR_URING_F_*
};

// io_uring_register(2) itself: liburing 2.3 wraps only some of its opcodes.
// Returns its result or -errno.
int uring_register(int ring_fd, unsigned op, void *arg, unsigned nr);

// Probed on first use; any thread.
const UringCaps &uring_caps();

} // namespace weir
