// The session's change of protocol: HTTP/1's Conn saw HTTP/2's preface.
#include "proto/session.h"

namespace weir {

void Session::destroy() {
    if (proto_ == Proto::Http1)
        h1().~Conn();
}

void Session::turn_h2() {
    // Until the HTTP/2 session lands: refused as HTTP/1 would have.
    h1().close(WEIR_CLOSE_BAD_REQUEST);
}

} // namespace weir
