package weirceleris

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/goceleris/celeris/protocol/h2/stream"
	weir "github.com/weir-http/weir/go-binding"
)

// Flush sends what was written before the handler goes on (server-sent
// events): the client reads the first event while the handler still waits
// for the test's release, in both execution modes (inline: the Flush hands
// the worker on, weir.ResponseWriter.HandOff; without it an inline handler
// that waits holds its one worker and nothing it flushed leaves). The arm
// that shows the loss is the same exchange without a Flush: nothing arrives
// before the release (the answer is gathered whole, with Content-Length).
func TestFlushSendsBeforeTheHandlerReturns(t *testing.T) {
	for _, async := range []bool{true, false} {
		flushArms(t, async)
	}
}

func flushArms(t *testing.T, async bool) {
	for _, flush := range []bool{true, false} {
		release := make(chan struct{})
		h := stream.HandlerFunc(func(_ context.Context, s *stream.Stream) error {
			st := s.ResponseWriter.(stream.Streamer)
			if err := st.WriteHeader(s, 200, [][2]string{{"content-type", "text/event-stream"}}); err != nil {
				return err
			}
			if err := st.Write(s, []byte("data: first\n\n")); err != nil {
				return err
			}
			if flush {
				if err := st.Flush(s); err != nil {
					return err
				}
			}
			<-release
			if err := st.Write(s, []byte("data: second\n\n")); err != nil {
				return err
			}
			return st.Close(s)
		})
		we, err := New(weir.Config{Addr: "127.0.0.1:0", Backend: testBackend(), Workers: 1, Async: async}, h)
		if errors.Is(err, weir.ErrUnavailable) {
			t.Skipf("%v: %v", testBackend(), err)
		}
		if err != nil {
			t.Fatal(err)
		}
		addr := serve(t, we)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("GET /events HTTP/1.1\r\nHost: h\r\n\r\n"))
		got := make(chan string, 1)
		br := bufio.NewReader(c)
		go func() {
			var seen strings.Builder
			for !strings.Contains(seen.String(), "data: first") {
				line, err := br.ReadString('\n')
				seen.WriteString(line)
				if err != nil {
					break
				}
			}
			got <- seen.String()
		}()
		var early string
		arrived := false
		select {
		case early = <-got:
			arrived = true
		case <-time.After(time.Second):
		}
		close(release)
		if flush && (!strings.Contains(early, "data: first") || !strings.Contains(early, "Transfer-Encoding: chunked")) {
			t.Errorf("async=%v: with Flush, before the release the client read %q", async, early)
		}
		if !flush && early != "" {
			t.Errorf("async=%v: without Flush the first event arrived early (%q): the arm shows nothing", async, early)
		}
		if !arrived {
			<-got // the reader goroutine owns br until it has the first event
		}
		rest := make([]byte, 256)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var tail strings.Builder
		for !strings.Contains(tail.String(), "data: second") {
			n, err := br.Read(rest)
			tail.Write(rest[:n])
			if err != nil {
				t.Errorf("async=%v flush=%v: the second event: %v (read %q)", async, flush, err, tail.String())
				break
			}
		}
		_ = c.Close()
	}
}
