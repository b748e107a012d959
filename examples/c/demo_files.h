/* weir-demo's /files/NAME with --static DIR: the regular file DIR/NAME,
 * answered with weir_serve_file as nginx answers a static file: ETag,
 * Last-Modified, 304 to If-None-Match/If-Modified-Since, 412, a single
 * Range as 206 (416 when unsatisfiable), HEAD, 405 for other methods, and
 * a Content-Type by the name's extension (weir_content_type). NAME is one path segment: a name with a
 * '/', a '%' (an encoded slash or dot is not decoded into one), a leading
 * '.' (".", "..", hidden files) or a NUL is refused with 400 before any
 * file is opened, and the file is opened relative to DIR without following
 * a symbolic link, so no request reaches a file outside DIR. Included once,
 * by weir-demo.c. */
#ifndef DEMO_FILES_H
#define DEMO_FILES_H

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weir.h"

static int demo_files_dirfd = -1;

/* Opens --static DIR once; 0, or -1 with errno. */
static int demo_files_open(const char *dir) {
    if (!dir)
        return 0;
    demo_files_dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return demo_files_dirfd < 0 ? -1 : 0;
}

static int demo_files_name_ok(weir_str_t n) {
    if (n.len == 0 || n.len >= NAME_MAX || n.ptr[0] == '.')
        return 0;
    for (size_t i = 0; i < n.len; i++)
        if (n.ptr[i] == '/' || n.ptr[i] == '%' || n.ptr[i] == '\\' || n.ptr[i] == 0)
            return 0;
    return 1;
}

static void demo_files_answer(weir_exchange *ex, weir_str_t name, const weir_header_t *text) {
    if (demo_files_dirfd < 0) {
        weir_respond(ex, 404, text, 1, "Not Found\n", 10, 0);
        return;
    }
    if (!demo_files_name_ok(name)) {
        weir_respond(ex, 400, text, 1, "bad file name\n", 14, 0);
        return;
    }
    char path[NAME_MAX + 1];
    memcpy(path, name.ptr, name.len);
    path[name.len] = 0;
    int fd = openat(demo_files_dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        weir_respond(ex, 404, text, 1, "Not Found\n", 10, 0);
        return;
    }
    weir_file_options opts;
    weir_file_options_init(&opts);
    opts.content_type = weir_content_type(name.ptr, name.len);
    int rc = weir_serve_file(ex, fd, &opts);
    close(fd); /* weir reads through its own dup */
    if (rc == -EINVAL || rc == -EMFILE || rc == -ENFILE || rc == -EBADF)
        weir_respond(ex, 500, text, 1, "file answer refused\n", 20, 0);
}

#endif
