package weir

import (
	"strings"
	"testing"
)

// The Go names are the library's list: every backend round-trips through
// its name, epoll is first and the zero value, and a name or a value no
// backend has is an error, never a silent epoll (what testBackend relies on).
func TestBackendsAreTheLibrarysList(t *testing.T) {
	bs := Backends()
	if len(bs) < 2 || bs[0] != BackendEpoll || bs[0].Name() != "epoll" {
		t.Fatalf("Backends() = %v, want epoll first and at least io_uring after it", bs)
	}
	seen := map[string]bool{}
	for _, b := range bs {
		n := b.Name()
		if n == "" || seen[n] {
			t.Fatalf("backend %d: name %q (empty or repeated)", b, n)
		}
		seen[n] = true
		got, err := BackendByName(n)
		if err != nil || got != b {
			t.Fatalf("BackendByName(%q) = %v, %v; want %v", n, got, err, b)
		}
	}
	if !seen["uring"] || BackendURing.Name() != "uring" {
		t.Fatalf("no uring in %v", seen)
	}
	for _, bad := range []string{"", "no-such-backend", "EPOLL", "io_uring"} {
		b, err := BackendByName(bad)
		if err == nil {
			t.Fatalf("BackendByName(%q) = %v, want an error", bad, b)
		}
		if !strings.Contains(err.Error(), "epoll") {
			t.Fatalf("BackendByName(%q): %v does not list the known names", bad, err)
		}
	}
	beyond := Backend(len(bs))
	if beyond.Name() != "" || Backend(-1).Name() != "" {
		t.Fatalf("values past the list have names: %q %q", beyond.Name(), Backend(-1).Name())
	}
	if _, err := New(Config{Addr: "127.0.0.1:0", Backend: beyond, Handler: func(*Request, *ResponseWriter) {}}); err == nil ||
		!strings.Contains(err.Error(), "unknown backend") {
		t.Fatalf("New with backend %d: %v, want unknown backend", beyond, err)
	}
}
