#include "systemd/image_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "handover/wire.h"
#include "weir.h"

namespace weir::systemd {

namespace {

using handover::ImageBody;

// magic and proto first, at fixed offsets for every version: a reader of
// any protocol can tell it cannot read the rest.
struct FileHead {
    uint32_t magic;
    uint16_t proto;
    uint16_t head_size;
    uint32_t record_size; // sizeof(Record) of the writer
    uint32_t pad;
    uint64_t count;
    uint64_t bytes; // the whole file
};

struct Record {
    uint64_t ino;
    ImageBody body; // body.unread_len bytes follow, padded to 8
};

constexpr uint32_t kFileMagic = 0x53494557; // "WEIS": weir's store
constexpr size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

int write_all(int fd, const void *p, size_t n) {
    const char *c = static_cast<const char *>(p);
    while (n) {
        ssize_t k = ::write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? -errno : -EIO;
        c += k;
        n -= static_cast<size_t>(k);
    }
    return 0;
}

} // namespace

uint64_t socket_ino(int fd) {
    struct stat st;
    return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? static_cast<uint64_t>(st.st_ino) : 0;
}

int write_images(const std::vector<ImageNode *> &images, const std::vector<uint64_t> &inos, int *out) {
    size_t bytes = sizeof(FileHead);
    for (ImageNode *n : images)
        bytes += sizeof(Record) + pad8(n->img.unread_len);
    // Built whole in memory, then written once: 10,000 idle connections are
    // about 1.5 MiB.
    auto *buf = static_cast<char *>(std::calloc(1, bytes));
    if (!buf)
        return -ENOMEM;
    FileHead h{kFileMagic, handover::kProto, sizeof(FileHead), sizeof(Record), 0, images.size(), bytes};
    std::memcpy(buf, &h, sizeof h);
    size_t off = sizeof h;
    for (size_t i = 0; i < images.size(); i++) {
        const ConnImage &img = images[i]->img;
        Record r{};
        r.ino = inos[i];
        r.body = handover::to_body(img, images[i]->seq);
        std::memcpy(buf + off, &r, sizeof r);
        off += sizeof r;
        if (img.unread_len)
            std::memcpy(buf + off, img.unread, img.unread_len);
        off += pad8(img.unread_len);
    }
    int fd = ::memfd_create("weir-images", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int rc = fd < 0 ? -errno : write_all(fd, buf, bytes);
    std::free(buf);
    // Sealed: neither this process nor the next can change what it says.
    if (rc == 0 && ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
        rc = -errno;
    if (rc < 0) {
        if (fd >= 0)
            ::close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

int read_images(int fd, std::vector<StoredImage> &out) {
    out.clear();
    struct stat st;
    if (::fstat(fd, &st) < 0)
        return -errno;
    size_t size = static_cast<size_t>(st.st_size);
    if (size < offsetof(FileHead, head_size))
        return -EPROTO;
    void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        return -errno;
    const char *p = static_cast<const char *>(map);
    FileHead h{};
    std::memcpy(&h, p, size < sizeof h ? size : sizeof h);
    int rc = 0;
    if (h.magic != kFileMagic)
        rc = -EPROTO;
    else if (h.proto != handover::kProto)
        rc = WEIR_E_HANDOVER_VERSION;
    else if (size < sizeof h || h.head_size != sizeof h || h.record_size != sizeof(Record) || h.bytes != size ||
             h.count > (size - sizeof h) / sizeof(Record))
        rc = -EPROTO;
    size_t off = sizeof h;
    for (uint64_t i = 0; rc == 0 && i < h.count; i++) {
        Record r;
        if (size - off < sizeof r) {
            rc = -EPROTO;
            break;
        }
        std::memcpy(&r, p + off, sizeof r);
        off += sizeof r;
        const ImageBody &b = r.body;
        if (b.peer_len > sizeof b.peer || b.unread_len > size - off || pad8(b.unread_len) > size - off) {
            rc = -EPROTO;
            break;
        }
        StoredImage si;
        si.ino = r.ino;
        si.node.reset(new (std::nothrow) ImageNode);
        if (!si.node) {
            rc = -ENOMEM;
            break;
        }
        si.node->seq = b.seq;
        ConnImage &img = si.node->img;
        handover::from_body(b, img);
        if (b.unread_len) {
            img.unread = static_cast<char *>(std::malloc(b.unread_len));
            if (!img.unread) {
                rc = -ENOMEM;
                break;
            }
            std::memcpy(img.unread, p + off, b.unread_len);
            img.unread_len = b.unread_len;
        }
        off += pad8(b.unread_len);
        out.push_back(std::move(si));
    }
    ::munmap(map, size);
    if (rc < 0)
        out.clear();
    return rc;
}

} // namespace weir::systemd
