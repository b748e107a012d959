#include "loop/config.h"

#include <cstring>

#include "http1/parser.h"

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
    http1::limits_default(&cfg->limits);
}

} // namespace weir
