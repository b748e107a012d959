// The value of HTTP2-Settings (RFC 7540 §3.2.1): a SETTINGS payload in
// base64url. One decoder for the two places that read it: the Conn, which
// takes the upgrade only when the value decodes (otherwise the request is
// served as HTTP/1.1, as the RFC lets a server ignore an upgrade), and the
// HTTP/2 session, which applies the decoded settings after its 101.
#pragma once

#include <string>

#include "weir.h"

namespace weir {

// Decodes base64url without padding (a padded value, and '+' '/', are taken
// too) into out when out is given. True when every character is of the
// alphabet, no partial sextet is left over (a length of 4k+1) and the
// payload is whole SETTINGS entries (a multiple of 6 bytes).
bool h2c_settings_decode(weir_str_t in, std::string *out);

} // namespace weir
