package weir

/*
#include <stdlib.h>
#include <weir.h>
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// The backends come from the linked library's one list (weir_backend_name,
// weir_backend_by_name; lib/backends/registry.h), so a test runner or a flag
// that takes a name accepts exactly the backends weir has, and an unknown
// name is an error rather than a silent epoll (issue 31). Backend values are
// the C ones less one: the zero Backend is epoll, weir's default.

// Backends lists every backend of the linked library, in its order (epoll
// first). A backend this kernel refuses is listed too: New reports
// ErrUnavailable for it.
func Backends() []Backend {
	var out []Backend
	for id := C.uint32_t(1); C.weir_backend_name(id) != nil; id++ {
		out = append(out, Backend(id-1))
	}
	return out
}

// Name is the backend's short name in the library's list ("epoll",
// "uring": what weir-demo's --backend and WEIR_TEST_BACKEND take), or ""
// for a value no backend has. String gives the name logs use ("io_uring").
func (b Backend) Name() string {
	if b < 0 {
		return ""
	}
	p := C.weir_backend_name(C.uint32_t(b) + 1)
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// BackendByName is the backend the library's list names name (exact,
// case-sensitive: "epoll", "uring"); an unknown name is an error that lists
// the known ones.
func BackendByName(name string) (Backend, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	id := C.weir_backend_by_name(cs)
	if id <= 0 {
		var names []string
		for _, b := range Backends() {
			names = append(names, b.Name())
		}
		return 0, fmt.Errorf("weir: %q names no backend (%s)", name, strings.Join(names, ", "))
	}
	return Backend(id - 1), nil
}
