// What the files of lib/h2 share beyond the session's header: the nghttp2
// session's making (h2_callbacks.cc) and the answers' data source
// (h2_output.cc). Private to lib/h2.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>

namespace weir {
class H2Session;
namespace h2_detail {

struct MemCache;

// The opaque data of begin_drain's PING: its ACK sends the final GOAWAY.
inline const uint8_t kDrainPing[8] = {'w', 'e', 'i', 'r', 'd', 'r', 'a', 'n'};

// The read buffers (cs.read_buffer_size bytes), cached per thread.
char *take_buf(size_t size);
void give_buf(char *p, size_t size);

// nghttp2's allocator for one session (h2_alloc.cc): freed blocks of a few
// size classes kept in the session's MemCache, freed with it.
MemCache *mem_cache_new();
void mem_cache_del(MemCache *m);
nghttp2_mem session_mem(MemCache *m);

// Makes s.ng_ (server, settings sent, options set); false when out of memory.
bool make_session(H2Session &s);

// The data source of every answer with a body: copies the stream's unsent
// bytes, defers when it has none yet, ends (with trailers) when told.
ssize_t read_out(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
                 nghttp2_data_source *source, void *user_data);

// NGHTTP2_DATA_FLAG_NO_COPY's writer: a DATA frame's 9-byte head and its
// payload (the stream's backlog) appended straight to the session's output.
int send_data(nghttp2_session *ng, nghttp2_frame *frame, const uint8_t *framehd, size_t length,
              nghttp2_data_source *source, void *user_data);

} // namespace h2_detail
} // namespace weir
