// The connection images a service leaves in systemd's fd store, in one
// sealed memfd (FDNAME=weir-images): a head naming the handover protocol,
// then per connection its socket's inode (how the next process finds its fd
// among those the store passes, whatever their order) and the handover's
// ImageBody (handover/wire.h), its unread bytes after it. One format with the
// handover: a reader of another protocol refuses the whole file.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loop/worker.h"

namespace weir::systemd {

// A socket's name across processes: fstat's inode (sockfs), or 0.
uint64_t socket_ino(int fd);

// Writes the images (each with its socket's inode, inos[i]) to a new memfd
// and seals it. Returns 0 and *out, or -errno.
int write_images(const std::vector<ImageNode *> &images, const std::vector<uint64_t> &inos, int *out);

struct StoredImage {
    uint64_t ino = 0;
    std::unique_ptr<ImageNode> node; // img.fd is -1: the caller finds it by ino
};

// Reads a file write_images wrote. Returns 0 and out, or
// WEIR_E_HANDOVER_VERSION (another protocol: nothing read), -EPROTO
// (malformed: nothing read), -ENOMEM, -errno.
int read_images(int fd, std::vector<StoredImage> &out);

} // namespace weir::systemd
