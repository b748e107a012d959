package weir

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// ServeFile (weir_serve_file) in both modes, each case beside its other arm:
// 200 with ETag, Last-Modified, Accept-Ranges, the name's content type and
// the added fields; If-None-Match with that ETag → 304 (another ETag → 200);
// If-Modified-Since the Last-Modified → 304 (an hour before it → 200);
// If-Match with another ETag → 412 (with its own → 200); a range → 206 with
// exactly those bytes and Content-Range (NoRanges → 200, no Accept-Ranges);
// a range past the end → 416; HEAD → the head with the length and no body;
// POST → 405 with Allow; FileOptions.ContentType; a field weir owns refused
// before the crossing (ErrFileHeader, the handler still answers); a
// directory refused (ErrNotRegular). Metrics.FileServes counts the answers
// ServeFile made and only those. ServeFile's status is checked in the
// handler against the one the client reads.
func TestServeFile(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	path := filepath.Join(dir, "page.html")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, async := range []bool{false, true} {
		statuses := make(chan int, 32)
		e, addr := start(t, Config{Async: async, Handler: func(r *Request, w *ResponseWriter) {
			name := path
			if r.Path() == "/dir" {
				name = dir
			}
			f, err := os.Open(name)
			if err != nil {
				_ = w.RespondString(500, err.Error())
				return
			}
			defer f.Close() // weir keeps its own duplicate
			var opts *FileOptions
			switch r.Path() {
			case "/noranges":
				opts = &FileOptions{NoRanges: true}
			case "/typed":
				opts = &FileOptions{ContentType: "text/x-weir"}
			case "/owned":
				_ = w.AddHeader("ETag", `"mine"`)
			}
			_ = w.AddHeader("Cache-Control", "max-age=60")
			status, err := w.ServeFile(f, opts)
			if err != nil {
				if w.Answered() {
					t.Errorf("ServeFile %s: %v, exchange consumed", r.Path(), err)
					return
				}
				w.resetHeaders()
				_ = w.RespondString(599, err.Error()) // the refusals reach the client as 599
				status = 599
			}
			statuses <- status
		}})
		c := dial(t, addr)
		req := func(method, path string, fields ...string) {
			raw := method + " " + path + " HTTP/1.1\r\nHost: test\r\n"
			for _, f := range fields {
				raw += f + "\r\n"
			}
			c.send(raw + "\r\n")
		}
		expect := func(method string, want int, what string) (*http.Response, string) {
			t.Helper()
			resp, body := c.read(method)
			if resp.StatusCode != want {
				t.Fatalf("async %v, %s: %d %q, want %d", async, what, resp.StatusCode, body, want)
			}
			select {
			case got := <-statuses:
				if got != want {
					t.Fatalf("async %v, %s: ServeFile returned %d, client read %d", async, what, got, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("async %v, %s: the handler reported no status", async, what)
			}
			return resp, body
		}
		serves0 := e.Metrics().FileServes

		req("GET", "/")
		resp, body := expect("GET", 200, "plain GET")
		etag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
		if body != string(content) || etag == "" || lm == "" || resp.Header.Get("Accept-Ranges") != "bytes" ||
			resp.Header.Get("Content-Type") != ContentType("page.html") || resp.Header.Get("Cache-Control") != "max-age=60" {
			t.Fatalf("async %v, 200: %d bytes, header %v", async, len(body), resp.Header)
		}
		if ContentType("page.html") != "text/html; charset=utf-8" || ContentType("x.unknown") != "application/octet-stream" {
			t.Fatalf("ContentType: %q, %q", ContentType("page.html"), ContentType("x.unknown"))
		}
		mtime, err := http.ParseTime(lm)
		if err != nil {
			t.Fatalf("Last-Modified %q: %v", lm, err)
		}

		req("GET", "/", "If-None-Match: "+etag)
		resp, body = expect("GET", 304, "If-None-Match matching")
		if body != "" || resp.Header.Get("ETag") != etag || resp.Header.Get("Cache-Control") != "max-age=60" {
			t.Fatalf("async %v, 304: %q, header %v", async, body, resp.Header)
		}
		req("GET", "/", `If-None-Match: "other"`) // the other arm: no match, the file
		if _, body = expect("GET", 200, "If-None-Match not matching"); body != string(content) {
			t.Fatalf("async %v: If-None-Match not matching: %d bytes", async, len(body))
		}
		req("GET", "/", "If-Modified-Since: "+lm)
		expect("GET", 304, "If-Modified-Since the mtime")
		req("GET", "/", "If-Modified-Since: "+mtime.Add(-time.Hour).Format(http.TimeFormat))
		expect("GET", 200, "If-Modified-Since before the mtime")

		req("GET", "/", `If-Match: "other"`)
		resp, _ = expect("GET", 412, "If-Match not matching")
		if resp.Header.Get("Cache-Control") != "" {
			t.Fatalf("async %v: 412 carries the host's fields: %v", async, resp.Header)
		}
		req("GET", "/", "If-Match: "+etag)
		expect("GET", 200, "If-Match matching")

		req("GET", "/", "Range: bytes=10-19")
		resp, body = expect("GET", 206, "Range")
		if body != string(content[10:20]) || resp.Header.Get("Content-Range") != "bytes 10-19/"+strconv.Itoa(len(content)) {
			t.Fatalf("async %v, 206: %q, Content-Range %q", async, body, resp.Header.Get("Content-Range"))
		}
		req("GET", "/", "Range: bytes=-5")
		if _, body = expect("GET", 206, "suffix Range"); body != string(content[len(content)-5:]) {
			t.Fatalf("async %v, suffix 206: %q", async, body)
		}
		req("GET", "/noranges", "Range: bytes=10-19")
		resp, body = expect("GET", 200, "Range with NoRanges")
		if body != string(content) || resp.Header.Get("Accept-Ranges") != "" {
			t.Fatalf("async %v, NoRanges: %d bytes, Accept-Ranges %q", async, len(body), resp.Header.Get("Accept-Ranges"))
		}
		req("GET", "/", "Range: bytes="+strconv.Itoa(len(content))+"-")
		resp, _ = expect("GET", 416, "Range past the end")
		if resp.Header.Get("Content-Range") != "bytes */"+strconv.Itoa(len(content)) {
			t.Fatalf("async %v, 416: Content-Range %q", async, resp.Header.Get("Content-Range"))
		}

		req("HEAD", "/")
		resp, body = expect("HEAD", 200, "HEAD")
		if body != "" || resp.Header.Get("Content-Length") != strconv.Itoa(len(content)) || resp.Header.Get("ETag") != etag {
			t.Fatalf("async %v, HEAD: %q, header %v", async, body, resp.Header)
		}
		c.send("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n")
		resp, _ = expect("POST", 405, "POST")
		if resp.Header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("async %v, 405: Allow %q", async, resp.Header.Get("Allow"))
		}

		req("GET", "/typed")
		if resp, _ = expect("GET", 200, "FileOptions.ContentType"); resp.Header.Get("Content-Type") != "text/x-weir" {
			t.Fatalf("async %v: Content-Type %q", async, resp.Header.Get("Content-Type"))
		}
		req("GET", "/owned")
		if _, body = expect("GET", 599, "an owned field"); body != ErrFileHeader.Error() {
			t.Fatalf("async %v, owned field: %q", async, body)
		}
		req("GET", "/dir")
		if _, body = expect("GET", 599, "a directory"); body != ErrNotRegular.Error() {
			t.Fatalf("async %v, directory: %q", async, body)
		}
		// 14 answers, the two refusals not among them.
		if got := e.Metrics().FileServes - serves0; got != 14 {
			t.Errorf("async %v: FileServes %d, want 14", async, got)
		}
	}
}

// ServeFile's Close (and SetClose) end the connection after the answer; the
// other arm, keep-alive, is every request of TestServeFile on one connection.
func TestServeFileClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(path, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, async := range []bool{false, true} {
		_, addr := start(t, Config{Async: async, Handler: func(r *Request, w *ResponseWriter) {
			f, err := os.Open(path)
			if err != nil {
				_ = w.RespondString(500, err.Error())
				return
			}
			defer f.Close()
			if _, err := w.ServeFile(f, &FileOptions{Close: true}); err != nil {
				t.Errorf("ServeFile: %v", err)
			}
			if _, err := w.ServeFile(f, nil); !errors.Is(err, ErrAnswered) {
				t.Errorf("second ServeFile: %v, want ErrAnswered", err)
			}
		}})
		c := dial(t, addr)
		c.send(get("/"))
		resp, body := c.read("GET")
		if resp.StatusCode != 200 || body != "abc" || !resp.Close || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("async %v: %d %q close %v type %q", async, resp.StatusCode, body, resp.Close, resp.Header.Get("Content-Type"))
		}
		if _, err := c.br.ReadByte(); err == nil {
			t.Fatalf("async %v: the connection stayed open", async)
		}
	}
}
