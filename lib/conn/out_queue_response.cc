// The HTTP/1.1 writers for a connection's OutQueue: instantiated here, on the
// queue's side, so that lib/http1/ stays pure and names no connection type.
#include "conn/out_queue.h"
#include "http1/response_write.h"

namespace weir::http1 {

template bool write_fields<OutQueue>(OutQueue &, const weir_header_t *, size_t);
template bool write_stream_head<OutQueue>(OutQueue &, int, const weir_header_t *, size_t, uint64_t, StreamFraming,
                                          const ResponseShape &);
template bool write_stream_piece<OutQueue>(OutQueue &, StreamFraming, const void *, size_t);
template bool write_last_chunk<OutQueue>(OutQueue &, const weir_header_t *, size_t);
template bool write_response<OutQueue>(OutQueue &, int, const weir_header_t *, size_t, const void *, size_t,
                                      const ResponseShape &);
template bool write_error_response<OutQueue>(OutQueue &, int);

} // namespace weir::http1
