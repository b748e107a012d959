#include "loop/config.h"

#include <cstring>

#include "util/sized.h"

namespace weir {

void config_defaults(weir_config *cfg) {
    std::memset(cfg, 0, sizeof *cfg);
    cfg->size = sizeof *cfg;
    cfg->port = 0;
    cfg->host = "127.0.0.1";
    cfg->backend = WEIR_BACKEND_EPOLL;
    cfg->workers = 0;
    cfg->mode = WEIR_MODE_INLINE;
    cfg->accept_batch = 16;
    cfg->backlog = 1024;
    cfg->defer_accept = 1;
    cfg->linger_ms = 1500;
    cfg->tcp_nodelay = 1;
    cfg->read_buffer_size = 16384;
    cfg->max_output_bytes = 4194304;
    cfg->max_connections = 10000;
    cfg->max_pipeline = 64;
    cfg->header_timeout_ms = 10000;
    cfg->idle_timeout_ms = 60000;
    cfg->write_timeout_ms = 30000;
    cfg->body_timeout_ms = 10000;
    cfg->handler_timeout_ms = 0;
    cfg->stream_window_bytes = 0; // 256 KiB, or max_output_bytes when smaller (engine.cc)
    cfg->limits = nullptr;
    cfg->proxy_protocol = WEIR_PROXY_OFF;
    cfg->proxy_timeout_ms = 5000;
    cfg->proxy_trusted = nullptr;
    cfg->proxy_max_bytes = 4096;
    cfg->request_timeout_ms = 300000;
    cfg->min_body_rate = 500;
    cfg->min_send_rate = 500;
    cfg->rate_window_ms = 10000;
    cfg->trim_interval_ms = 1000;
    cfg->protocols = WEIR_PROTO_AUTO;
    cfg->h2_max_streams = 100;
    cfg->h2_header_table = 4096;
    cfg->h2_stream_window = 65535;
}

bool config_resolve(const weir_config *in, weir_config *out) {
    weir_config d;
    config_defaults(&d);
    *out = d;
    if (!sized::copy_in(in, out))
        return false;
    // Zero is the default wherever it has no use of its own; port, workers,
    // accept_batch, defer_accept, linger_ms, tcp_nodelay and the timeouts
    // keep their zero's meaning (weir.h says which).
    weir_config &c = *out;
    if (!c.host)
        c.host = d.host;
    if (c.backend == 0)
        c.backend = d.backend;
    if (c.mode == 0)
        c.mode = d.mode;
    if (c.backlog == 0)
        c.backlog = d.backlog;
    if (c.read_buffer_size == 0)
        c.read_buffer_size = d.read_buffer_size;
    if (c.max_output_bytes == 0)
        c.max_output_bytes = d.max_output_bytes;
    if (c.max_connections == 0)
        c.max_connections = d.max_connections;
    if (c.max_pipeline == 0)
        c.max_pipeline = d.max_pipeline;
    if (c.proxy_timeout_ms == 0)
        c.proxy_timeout_ms = d.proxy_timeout_ms;
    if (c.proxy_max_bytes == 0)
        c.proxy_max_bytes = d.proxy_max_bytes;
    if (c.request_timeout_ms == 0)
        c.request_timeout_ms = d.request_timeout_ms;
    if (c.min_body_rate == 0)
        c.min_body_rate = d.min_body_rate;
    if (c.min_send_rate == 0)
        c.min_send_rate = d.min_send_rate;
    if (c.rate_window_ms == 0)
        c.rate_window_ms = d.rate_window_ms;
    if (c.trim_interval_ms == 0)
        c.trim_interval_ms = d.trim_interval_ms;
    return true;
}

} // namespace weir
