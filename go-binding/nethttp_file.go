package weir

import (
	"io"
	"net/http"
	"os"
	"strconv"
)

// io.ReaderFrom on the net/http adapter's writer: http.ServeContent,
// http.ServeFile and http.FileServer copy a file's bytes with io.CopyN(w,
// file, n), which hands ReadFrom an *io.LimitedReader over the *os.File
// (seeked to the range's start). When nothing of the answer has left or
// been written, and the Content-Length the handler set is exactly what the
// reader holds, the answer is weir's file answer (ResponseWriter.RespondFile:
// sendfile on epoll, splice on io_uring, nothing copied through Go) from the
// file's current offset; Metrics.FileAnswers counts it. Anything else (not a
// file, a pipe, a length that is not the whole answer, bytes written before,
// trailers declared) is copied as Write would, counted in Metrics.CopiedReads.

// ReadFrom is io.ReaderFrom (see above).
func (hw *httpWriter) ReadFrom(src io.Reader) (int64, error) {
	if n, done, err := hw.sendFile(src); done {
		return n, err
	}
	if hw.w != nil && hw.w.e != nil {
		hw.w.e.stats.copied.Add(1)
	}
	return io.Copy(writerOnly{hw}, src)
}

// writerOnly hides ReadFrom from io.Copy (which would call it again).
type writerOnly struct{ io.Writer }

// sendFile answers from src's file when it can; done false: copy instead.
func (hw *httpWriter) sendFile(src io.Reader) (int64, bool, error) {
	if hw.hijack || hw.filed || hw.stream != nil || hw.buf.Len() > 0 || hw.err != nil {
		return 0, false, nil
	}
	f, off, n, advance, ok := fileSpan(src)
	if !ok || n <= 0 {
		return 0, false, nil
	}
	if hw.status == 0 {
		hw.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(hw.status) {
		return 0, false, nil // Write's http.ErrBodyNotAllowed
	}
	if cl, err := strconv.ParseInt(hw.sent.Get("Content-Length"), 10, 64); err != nil || cl != n {
		return 0, false, nil // not the whole answer, or not announced: weir's file answer is both
	}
	if _, declared := hw.sent["Trailer"]; declared || hw.hasTrailers() {
		return 0, false, nil // trailers need a chunked answer
	}
	if _, ok := hw.sent["Content-Type"]; !ok {
		var head [512]byte
		k, _ := f.ReadAt(head[:min(int64(len(head)), n)], off)
		hw.sent.Set("Content-Type", http.DetectContentType(head[:k]))
	}
	hw.addHeaders()
	err := hw.w.RespondFile(hw.status, f, off, n)
	if err != nil && !hw.w.answered {
		hw.w.resetHeaders() // refused (not a regular file, a range past its end): copied instead
		return 0, false, nil
	}
	hw.filed = true
	if err != nil {
		return 0, true, err // consumed: the client left
	}
	advance(n)
	return n, true, nil
}

// fileSpan finds the file under src and the bytes src would read from it:
// an *os.File from its current offset to its end, an *io.LimitedReader over
// one (io.CopyN's), an *io.SectionReader over one from its position.
// advance(k) moves src past k bytes, as reading them would have.
func fileSpan(src io.Reader) (f *os.File, off, n int64, advance func(int64), ok bool) {
	switch r := src.(type) {
	case *os.File:
		cur, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, 0, 0, nil, false
		}
		st, err := r.Stat()
		if err != nil || !st.Mode().IsRegular() || st.Size() < cur {
			return nil, 0, 0, nil, false
		}
		return r, cur, st.Size() - cur, func(k int64) { _, _ = r.Seek(cur+k, io.SeekStart) }, true
	case *io.LimitedReader:
		f, off, n, adv, ok := fileSpan(r.R)
		if !ok {
			return nil, 0, 0, nil, false
		}
		return f, off, min(n, r.N), func(k int64) { adv(k); r.N -= k }, true
	case *io.SectionReader:
		outer, base, size := r.Outer()
		file, isFile := outer.(*os.File)
		if !isFile {
			return nil, 0, 0, nil, false
		}
		cur, err := r.Seek(0, io.SeekCurrent)
		if err != nil || cur > size {
			return nil, 0, 0, nil, false
		}
		return file, base + cur, size - cur, func(k int64) { _, _ = r.Seek(cur+k, io.SeekStart) }, true
	}
	return nil, 0, 0, nil, false
}

var _ io.ReaderFrom = (*httpWriter)(nil)
