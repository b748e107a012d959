#include "util/codes.h"

namespace weir {

const char *code_name(int rc) {
    switch (rc) {
#define X(c, s, t)                                                                                             \
    case c:                                                                                                    \
        return #c;
        WEIR_CODE_LIST(X)
#undef X
    default:
        return nullptr;
    }
}

const char *code_text(int rc) {
    switch (rc) {
#define X(c, s, t)                                                                                             \
    case c:                                                                                                    \
        return t;
        WEIR_CODE_LIST(X)
#undef X
    default:
        return nullptr;
    }
}

int code_status(int rc) {
    switch (rc) {
#define X(c, s, t)                                                                                             \
    case c:                                                                                                    \
        return s;
        WEIR_CODE_LIST(X)
#undef X
    default:
        return 0;
    }
}

const char *close_reason_name(uint32_t reason) {
    switch (reason) {
#define X(r, n)                                                                                                \
    case r:                                                                                                    \
        return n;
        WEIR_CLOSE_LIST(X)
#undef X
    default:
        return nullptr;
    }
}

} // namespace weir
