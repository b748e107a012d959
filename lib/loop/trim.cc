#include "loop/trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace weir {

bool heap_trim() {
#if defined(__GLIBC__)
    // pad 0: keep nothing spare at the top; the next burst's malloc pays a
    // brk or a page fault, which is what following the load costs.
    malloc_trim(0);
    return true;
#else
    return false;
#endif
}

} // namespace weir
