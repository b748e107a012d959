// The hot upgrade's wire (docs/upgrade.md "Protocol"): fixed-layout messages
// over a SOCK_SEQPACKET Unix socket between two processes of one machine
// (host byte order), descriptors riding as SCM_RIGHTS. A message is a Head
// and a body; an image's unread bytes follow its body, and continue in More
// messages when they do not fit one.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace weir {
struct ConnImage;
}

namespace weir::handover {

inline constexpr uint32_t kMagic = 0x52494557; // "WEIR"
inline constexpr uint16_t kProto = 1;          // WEIR_HANDOVER_PROTOCOL
inline constexpr size_t kMaxMsg = 64 * 1024;    // well inside a default socket buffer
inline constexpr size_t kMaxFds = 253;          // the kernel's SCM_MAX_FD

enum class Type : uint16_t {
    Hello = 1, // successor -> offerer: the protocols it speaks
    Offer,     // offerer -> successor: the listeners (fds)
    Ready,     // successor: it holds the listeners; send the connections
    Image,     // offerer: connections, each an ImageBody, its unread bytes and its fd
    More,      // offerer: more of the last image's unread bytes (cut: too large for one)
    Ack,       // successor: every image up to seq is mine now
    Holding,   // offerer: connections it still holds (the successor's `lost`)
    Done,      // offerer: it holds nothing; accept
    Commit,    // successor: it accepts; the offerer may go
    Refuse,    // either: no (an error code)
};

struct Head {
    uint32_t magic;
    uint16_t type;
    uint16_t proto;
    uint32_t len; // body bytes after the head
    uint32_t pad;
};

struct HelloBody {
    uint32_t proto_min, proto_max;
    int32_t pid;
    uint32_t workers;
};

struct OfferBody {
    uint32_t listeners;
    int32_t pid;
};

struct ImageBody {
    uint64_t seq, id;
    uint64_t requests, responses, parse_errors, continues_sent;
    uint64_t unread_len; // in all: this message's tail, then More messages
    uint32_t peer_len;
    uint32_t served; // bit 0: ConnImage::served; kImageSniff: ConnImage::sniff
    unsigned char peer[sizeof(sockaddr_storage)];
};

// A bit of ImageBody::served. A peer of the same kProto that predates it
// reads the image as served (keep-alive timing only) and parses its bytes
// as HTTP/1.
inline constexpr uint32_t kImageSniff = 2;

struct CountBody {
    uint64_t n;
};

struct RefuseBody {
    int32_t error;
    uint32_t pad;
};

inline constexpr size_t kMoreTail = kMaxMsg - sizeof(Head);

// An image's fields as the wire carries them, and back (its fd and unread
// bytes travel beside the body; from_body sets neither).
ImageBody to_body(const ConnImage &img, uint64_t seq);
void from_body(const ImageBody &b, ConnImage &img);

// Attaches nfds (<= kMaxFds) descriptors to mh as SCM_RIGHTS, in ctl (room
// for kMaxFds).
void attach_fds(msghdr &mh, unsigned char *ctl, const int *fds, size_t nfds);

// One message: body and tail gathered after the head, fds attached.
// Returns 0, -EAGAIN (flags has MSG_DONTWAIT and the socket is full), or -errno.
int send_msg(int sock, Type t, const void *body, size_t len, const void *tail, size_t tail_len, const int *fds,
             size_t nfds, int flags);

struct Msg {
    Head head;
    alignas(8) unsigned char data[kMaxMsg]; // body then tail
    size_t len = 0;                          // body + tail bytes
    int fds[kMaxFds];
    size_t nfds = 0;
    Type type() const { return static_cast<Type>(head.type); }
    // The body as T, or null when the message is too short for one.
    template <class T> const T *body() const { return len >= sizeof(T) ? reinterpret_cast<const T *>(data) : nullptr; }
    void close_fds(); // descriptors nobody took (those taken are -1)
};

// Returns 0 (m filled; its fds are the caller's), -EAGAIN (MSG_DONTWAIT, none
// yet), -EPIPE (the peer hung up), -EPROTO (not one of ours: bad magic,
// truncated, descriptors cut; any fds that came are closed), or -errno.
int recv_msg(int sock, Msg &m, int flags);

// Waits up to timeout_ms (< 0: forever) for sock to be readable: 0, -ETIMEDOUT, -errno.
int wait_readable(int sock, int timeout_ms);

} // namespace weir::handover
