package weirceleris

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/goceleris/celeris"
	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/protocol/h2/stream"
	"github.com/goceleris/celeris/resource"
	weir "github.com/weir-http/weir/go-binding"
)

// celeris's file answers on weir (WriteFileResponse, engine.go): c.File,
// a Range request (206 with Content-Range) and HEAD go through weir's file
// answer, counted in weir's FileAnswers; a file celeris serves buffered
// would leave the count at 0, which is this test's arm without the
// interface (the bytes alone cannot tell the two paths apart).
func TestCelerisFileOnWeir(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Repeat([]byte("celeris-on-weir\n"), 40000) // 640 000 bytes
	path := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	var we *Engine
	factory := Factory(weir.Config{Backend: testBackend(), Workers: 1})
	cfg := celeris.Config{Addr: "127.0.0.1:0", Protocol: celeris.HTTP1, Engine: testEngine(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.EngineFactory = func(rc resource.Config, h stream.Handler) (engine.Engine, error) {
		e, err := factory(rc, h)
		if err == nil {
			we = e.(*Engine)
		}
		return e, err
	}
	s := celeris.New(cfg)
	s.GET("/data.txt", func(c *celeris.Context) error { return c.File(path) })
	s.HEAD("/data.txt", func(c *celeris.Context) error { return c.File(path) })
	base := run(t, s)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	resp, err := client.Get(base + "/data.txt")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, content) || resp.ContentLength != int64(len(content)) {
		t.Fatalf("whole file: %d, %d bytes (length %d)", resp.StatusCode, len(body), resp.ContentLength)
	}

	req, _ := http.NewRequest("GET", base+"/data.txt", nil)
	req.Header.Set("Range", "bytes=16-31")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "bytes 16-31/" + strconv.Itoa(len(content))
	if resp.StatusCode != 206 || string(body) != string(content[16:32]) || resp.Header.Get("Content-Range") != want {
		t.Fatalf("range: %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Range"))
	}

	resp, err = client.Head(base + "/data.txt")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(content)) {
		t.Fatalf("HEAD: %d length %d", resp.StatusCode, resp.ContentLength)
	}
	if n := we.Weir().Metrics().FileAnswers; n != 3 {
		t.Errorf("weir's file answers %d, want 3: celeris served the file buffered", n)
	}
}
