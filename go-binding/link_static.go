//go:build weir_static

package weir

// Static linking (-tags weir_static): libweir.a and what it needs (the C++
// runtime, libnghttp2 for HTTP/2, liburing).
// cgo's pkg-config support cannot ask for --static nor prefer the archive, so
// the include and library directories come from the environment:
//
//	CGO_CFLAGS="$(pkg-config --cflags weir)" \
//	CGO_LDFLAGS="$(pkg-config --libs-only-L weir)" go build -tags weir_static
//
// (nothing is needed when weir is installed under /usr/local or /usr).

// #cgo LDFLAGS: -Wl,-Bstatic -lweir -Wl,-Bdynamic -lstdc++ -lnghttp2 -luring -lpthread
import "C"
