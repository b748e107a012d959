//go:build !weir_static

package weir

// Dynamic linking (the default): the installed weir.pc gives the include path
// and -lweir. Point PKG_CONFIG_PATH at PREFIX/lib/pkgconfig for a weir
// installed outside the default search path.

// #cgo pkg-config: weir
import "C"
