#include "proto/settings.h"

#include "http1/parser.h"

namespace weir {

bool session_settings(weir_config &c, ConnSettings *s) {
    // HTTP/1's parser limits, copied and clamped once for every connection
    // (HTTP/2 bounds a field list by the same max_header_bytes and max_headers).
    if (!http1::limits_resolve(c.limits, &s->limits))
        return false;
    c.limits = &s->limits;
    s->read_buffer_size = c.read_buffer_size;
    s->max_pipeline = c.max_pipeline;
    s->max_output_bytes = c.max_output_bytes;
    if (c.stream_window_bytes == 0) // the default, within a smaller output limit
        c.stream_window_bytes = c.max_output_bytes < (256u << 10) ? c.max_output_bytes : 256u << 10;
    if (c.stream_window_bytes > c.max_output_bytes)
        return false;
    s->stream_window = c.stream_window_bytes;
    s->stream_body_bytes = c.stream_body_bytes;
    s->proxy_max_bytes = c.proxy_max_bytes; // its range is the engine's check (lib/proxy's bounds)
    // HTTP/2 (docs/http2.md): which protocols, and its own bounds.
    if (c.protocols == 0)
        c.protocols = WEIR_PROTO_AUTO;
    if (c.protocols & ~WEIR_PROTO_AUTO)
        return false;
    if (c.h2_max_streams == 0)
        c.h2_max_streams = 100;
    if (c.h2_header_table == 0)
        c.h2_header_table = 4096;
    if (c.h2_stream_window == 0)
        c.h2_stream_window = 65535;
    if (c.h2_max_streams > 10000 || c.h2_header_table > 65536 || c.h2_stream_window > 0x7fffffffu)
        return false;
    s->protocols = c.protocols;
    s->h2_max_streams = c.h2_max_streams;
    s->h2_header_table = c.h2_header_table;
    s->h2_stream_window = c.h2_stream_window;
    return true;
}

} // namespace weir
