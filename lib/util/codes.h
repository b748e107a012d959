// weir's own result codes and close reasons, each written down once.
//
// WEIR_CODE_LIST gives every WEIR_E_* code of weir.h with its HTTP status
// (parse errors; 0 for the others) and its text; WEIR_CLOSE_LIST every
// WEIR_CLOSE_* reason with its metric name. capi/ (weir_strerror,
// weir_err_name, weir_http1_status, weir_close_reason_name) and lib/ (the
// status of a refused request) both read these lists, so a new code is one
// line here, and tests/scripts/capi_symbols.sh checks that weir.h and the
// list agree.
#pragma once

#include <cstdint>

#include "weir.h"

#define WEIR_CODE_LIST(X)                                                                                      \
    X(WEIR_E_INCOMPLETE, 0, "incomplete input: more bytes needed")                                             \
    X(WEIR_E_BAD_METHOD, 400, "method is not a token")                                                         \
    X(WEIR_E_BAD_TARGET, 400, "malformed request-target")                                                      \
    X(WEIR_E_BAD_VERSION, 400, "malformed HTTP-version")                                                       \
    X(WEIR_E_VERSION_UNSUPPORTED, 505, "HTTP version not supported")                                           \
    X(WEIR_E_BAD_REQUEST_LINE, 400, "malformed request line")                                                  \
    X(WEIR_E_REQUEST_LINE_TOO_LONG, 414, "request line too long")                                              \
    X(WEIR_E_BAD_LINE_ENDING, 400, "bare CR or LF where CRLF is required")                                     \
    X(WEIR_E_BAD_HEADER_NAME, 400, "field name is not a token")                                                \
    X(WEIR_E_WS_BEFORE_COLON, 400, "whitespace between field name and colon")                                  \
    X(WEIR_E_BAD_HEADER_VALUE, 400, "NUL or control character in a field value")                               \
    X(WEIR_E_OBS_FOLD, 400, "obsolete line folding")                                                           \
    X(WEIR_E_HEADERS_TOO_LARGE, 431, "header section too large")                                               \
    X(WEIR_E_TOO_MANY_HEADERS, 431, "too many header fields")                                                  \
    X(WEIR_E_MISSING_HOST, 400, "HTTP/1.1 request without Host")                                               \
    X(WEIR_E_DUPLICATE_HOST, 400, "more than one Host field")                                                  \
    X(WEIR_E_BAD_HOST, 400, "malformed Host")                                                                  \
    X(WEIR_E_BAD_CONTENT_LENGTH, 400, "invalid Content-Length")                                                \
    X(WEIR_E_CL_AND_TE, 400, "both Content-Length and Transfer-Encoding")                                      \
    X(WEIR_E_BAD_TRANSFER_ENCODING, 400, "chunked is not the final transfer coding")                           \
    X(WEIR_E_UNKNOWN_TRANSFER_CODING, 501, "transfer coding not implemented")                                  \
    X(WEIR_E_BODY_TOO_LARGE, 413, "body too large")                                                            \
    X(WEIR_E_EXPECTATION_FAILED, 417, "expectation not supported")                                             \
    X(WEIR_E_BAD_CHUNK, 400, "malformed chunk")                                                                \
    X(WEIR_E_CHUNK_EXT_TOO_LONG, 400, "chunk extensions too long")                                             \
    X(WEIR_E_TRAILERS_TOO_LARGE, 431, "trailer section too large")                                             \
    X(WEIR_E_STATE, 0, "operation does not fit the object's state")                                            \
    X(WEIR_E_GONE, 0, "the exchange's connection is gone")                                                     \
    X(WEIR_E_SHUTDOWN, 0, "engine is shutting down")                                                           \
    X(WEIR_E_UNAVAILABLE, 0, "backend not available on this kernel")                                          \
    X(WEIR_E_STALE, 0, "the exchange handle is stale: answered, timed out, or of a destroyed engine")          \
    X(WEIR_E_HANDOVER_VERSION, 0, "the handover's other side speaks another protocol version")

#define WEIR_CLOSE_LIST(X)                                                                                     \
    X(WEIR_CLOSE_PEER, "peer")                                                                                 \
    X(WEIR_CLOSE_NOT_KEEP_ALIVE, "not_keep_alive")                                                             \
    X(WEIR_CLOSE_BAD_REQUEST, "bad_request")                                                                   \
    X(WEIR_CLOSE_HEADER_TIMEOUT, "header_timeout")                                                             \
    X(WEIR_CLOSE_IDLE_TIMEOUT, "idle_timeout")                                                                 \
    X(WEIR_CLOSE_WRITE_TIMEOUT, "write_timeout")                                                               \
    X(WEIR_CLOSE_OUTPUT_LIMIT, "output_limit")                                                                 \
    X(WEIR_CLOSE_IO_ERROR, "io_error")                                                                         \
    X(WEIR_CLOSE_MAX_CONNECTIONS, "max_connections")                                                           \
    X(WEIR_CLOSE_SHUTDOWN, "shutdown")                                                                         \
    X(WEIR_CLOSE_HANDLER, "handler")                                                                           \
    X(WEIR_CLOSE_RESOURCE, "resource")                                                                         \
    X(WEIR_CLOSE_SILENT, "silent")                                                                             \
    X(WEIR_CLOSE_TRANSPLANT_REFUSED, "transplant_refused")                                                     \
    X(WEIR_CLOSE_BODY_TIMEOUT, "body_timeout")                                                                 \
    X(WEIR_CLOSE_HANDLER_TIMEOUT, "handler_timeout")                                                           \
    X(WEIR_CLOSE_UPGRADED, "upgraded")                                                                         \
    X(WEIR_CLOSE_BODY_UNREAD, "body_unread")                                                                   \
    X(WEIR_CLOSE_ABORTED, "aborted")                                                                           \
    X(WEIR_CLOSE_HANDOVER, "handover")                                                                         \
    X(WEIR_CLOSE_PROXY, "proxy")                                                                               \
    X(WEIR_CLOSE_REQUEST_TIMEOUT, "request_timeout")                                                           \
    X(WEIR_CLOSE_SLOW_BODY, "slow_body")                                                                       \
    X(WEIR_CLOSE_SLOW_READER, "slow_reader")                                                                   \
    X(WEIR_CLOSE_OVERLOAD, "overload")                                                                         \
    X(WEIR_CLOSE_H2_PROTOCOL, "h2_protocol")                                                                   \
    X(WEIR_CLOSE_H2_ABUSE, "h2_abuse")                                                                         \
    X(WEIR_CLOSE_GOAWAY, "goaway")

namespace weir {

// For a WEIR_E_* code: its symbolic name, its text, its HTTP status (0 when
// it is not a parse error). nullptr / 0 for anything else (errno values).
const char *code_name(int rc);
const char *code_text(int rc);
int code_status(int rc);

// "peer", "bad_request", ...; nullptr past the list.
const char *close_reason_name(uint32_t reason);

} // namespace weir
