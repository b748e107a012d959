// The exchange entry points behind capi/ (worker_exchange.cc): what
// weir_respond, weir_stream_*, weir_upgrade*, weir_respond_file,
// weir_body_read, weir_respond_interim and the exchange views call.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "weir.h"

namespace weir {

class Worker;

// Each resolves the host's handle through its ticket (loop/tickets.h) first.
int exchange_respond(weir_exchange *ex, int status, const weir_header_t *h, size_t nh, const void *body,
                     size_t len, uint32_t flags);
int exchange_defer(weir_exchange *ex);
int exchange_stream_start(weir_exchange *ex, int status, const weir_header_t *h, size_t nh, uint64_t length,
                          uint32_t flags);
int exchange_stream_write(weir_exchange *ex, const void *p, size_t n);
int exchange_stream_end(weir_exchange *ex, const weir_header_t *tr, size_t nt);
int64_t exchange_stream_room(weir_exchange *ex);
int exchange_stream_abort(weir_exchange *ex);
int exchange_upgrade(weir_exchange *ex, const weir_header_t *h, size_t nh, bool raw);
int exchange_upgrade_take(weir_exchange *ex, int *fd, void *buf, size_t cap, size_t *len);
int exchange_respond_file(weir_exchange *ex, int status, const weir_header_t *h, size_t nh, int fd,
                          uint64_t off, uint64_t len, uint32_t flags);
int64_t exchange_body_read(weir_exchange *ex, void *buf, size_t cap);
int exchange_interim(weir_exchange *ex, int status, const weir_header_t *h, size_t nh);
const weir_request *exchange_request(weir_exchange *ex);
int exchange_peer(weir_exchange *ex, sockaddr_storage *ss, socklen_t *len);
// The worker a live handle belongs to, or null (tests).
Worker *exchange_worker(weir_exchange *ex);
int exchange_gone(weir_exchange *ex);

} // namespace weir
