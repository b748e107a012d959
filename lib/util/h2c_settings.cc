// HTTP2-Settings' base64url (h2c_settings.h says who reads it and why).
#include "util/h2c_settings.h"

namespace weir {

bool h2c_settings_decode(weir_str_t in, std::string *out) {
    uint32_t acc = 0;
    int bits = 0;
    size_t chars = 0, bytes = 0;
    for (size_t i = 0; i < in.len; i++) {
        char c = in.ptr[i];
        int v = c >= 'A' && c <= 'Z'   ? c - 'A'
                : c >= 'a' && c <= 'z' ? c - 'a' + 26
                : c >= '0' && c <= '9' ? c - '0' + 52
                : c == '-' || c == '+' ? 62
                : c == '_' || c == '/' ? 63
                : c == '='             ? -2
                                       : -1;
        if (v == -2)
            break;
        if (v < 0)
            return false;
        chars++;
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            bytes++;
            if (out)
                out->push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    return chars % 4 != 1 && bytes % 6 == 0;
}

} // namespace weir
