package weir

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"testing"
)

// The native API's interim answers and trailers, both modes: Interim sends
// a 103 with its fields before the answer (the added headers are the
// answer's, not the 103's); a bad status or field is refused and sends
// nothing; after the answer it is ErrAnswered. EndTrailers ends a chunked
// stream with its trailer fields.
func TestNativeInterimAndTrailers(t *testing.T) {
	for _, async := range []bool{false, true} {
		errs := make(chan error, 4)
		_, addr := start(t, Config{Async: async, Handler: func(r *Request, w *ResponseWriter) {
			_ = w.AddHeader("X-Final", "1")
			errs <- w.Interim(101)
			errs <- w.Interim(103, "Content-Length", "1")
			if err := w.Interim(103, "Link", "</a.css>; rel=preload"); err != nil {
				t.Error(err)
			}
			if r.Path() == "/trailers" {
				s, err := w.Stream(200, LengthUnknown)
				if err != nil {
					t.Error(err)
					return
				}
				s.Write([]byte("body"))
				if err := s.EndTrailers("X-Sum", "4"); err != nil {
					t.Error(err)
				}
				return
			}
			_ = w.RespondString(200, "ok")
			errs <- w.Interim(103, "Link", "</late>")
		}})
		var seen []textproto.MIMEHeader
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if code == 103 {
				seen = append(seen, h)
			}
			return nil
		}}
		for _, p := range []string{"/", "/trailers"} {
			seen = nil
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+addr+p, nil)
			resp, err := httpClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if len(seen) != 1 || seen[0].Get("Link") != "</a.css>; rel=preload" || seen[0].Get("X-Final") != "" {
				t.Errorf("async %v %s: 103s %v", async, p, seen)
			}
			if resp.Header.Get("X-Final") != "1" {
				t.Errorf("async %v %s: final header %v", async, p, resp.Header)
			}
			if p == "/trailers" && (string(b) != "body" || resp.Trailer.Get("X-Sum") != "4") {
				t.Errorf("async %v: %q trailer %v", async, b, resp.Trailer)
			}
			if e1, e2 := <-errs, <-errs; !errors.Is(e1, ErrBadStatus) || !errors.Is(e2, ErrReservedHeader) {
				t.Errorf("async %v: Interim(101) %v, with Content-Length %v", async, e1, e2)
			}
			if p == "/" {
				if err := <-errs; !errors.Is(err, ErrAnswered) {
					t.Errorf("async %v: Interim after the answer: %v", async, err)
				}
			}
		}
	}
}
