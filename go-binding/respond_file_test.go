package weir

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// RespondFile (weir_respond_file) in both modes: a range of a file, the
// whole of a file larger than weir's output limit (it is sent as the client
// drains, not held), HEAD (the head only, with the length), and a range
// past the end refused with the exchange still the handler's (it answers
// 416). Metrics.FileAnswers counts the file answers.
func TestRespondFile(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, async := range []bool{false, true} {
		e, addr := start(t, Config{Async: async, MaxOutputBytes: 256 << 10, Handler: func(r *Request, w *ResponseWriter) {
			f, err := os.Open(path)
			if err != nil {
				_ = w.RespondString(500, err.Error())
				return
			}
			defer f.Close() // weir keeps its own duplicate
			off, n := int64(0), int64(len(content))
			switch r.Path() {
			case "/part":
				off, n = 16, 32
			case "/past":
				off, n = int64(len(content))-4, 8
			}
			_ = w.AddHeader("X-File", "yes")
			if err := w.RespondFile(200, f, off, n); err != nil {
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("RespondFile: %v", err)
				}
				_ = w.RespondString(416, "range not satisfiable")
			}
		}})
		c := dial(t, addr)
		c.send(get("/part") + get("/whole") + "HEAD /whole HTTP/1.1\r\nHost: x\r\n\r\n" + get("/past"))
		resp, body := c.read("GET")
		if resp.StatusCode != 200 || body != string(content[16:48]) || resp.Header.Get("X-File") != "yes" {
			t.Fatalf("async %v: /part %d %q", async, resp.StatusCode, body)
		}
		resp, body = c.read("GET")
		if resp.StatusCode != 200 || body != string(content) {
			t.Fatalf("async %v: /whole %d, %d bytes", async, resp.StatusCode, len(body))
		}
		resp, body = c.read("HEAD")
		if resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Length") != strconv.Itoa(len(content)) {
			t.Fatalf("async %v: HEAD %d %q length %q", async, resp.StatusCode, body, resp.Header.Get("Content-Length"))
		}
		resp, body = c.read("GET")
		if resp.StatusCode != 416 || body != "range not satisfiable" {
			t.Fatalf("async %v: /past %d %q", async, resp.StatusCode, body)
		}
		if m := e.Metrics(); m.FileAnswers != 3 {
			t.Errorf("async %v: FileAnswers %d, want 3", async, m.FileAnswers)
		}
	}
}
