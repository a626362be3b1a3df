// Package rtchan is the runtime channel: how a worker process reaches its
// host's runtime API over the host's Unix socket without net/http.
//
// A request is one frame, answered by one frame, on a kept connection:
//
//	request: length (4 bytes, big-endian) | method | path | token | run | body
//	answer:  length (4 bytes, big-endian) | status (2 bytes, big-endian) | body
//
// where method, path, token and run are each a uvarint length and that
// many bytes, and the body is the rest of the frame. The client writes a
// request and reads its answer on the caller's goroutine; the server reads,
// serves and answers each connection's requests on one goroutine. Nothing
// is handed between goroutines on the way, which is what a net/http
// exchange pays for around a request that waits for an fsync (see
// BENCHMARKS.md, 1a′).
//
// The server serves every request through an http.Handler, the same one
// HTTP clients reach: it builds the *http.Request (the token as the
// Authorization header, the run as wire.HeaderRun) and buffers the answer,
// so authentication, the run's checks and the handlers are not written
// twice. Only the status and the body travel back; headers do not.
//
// A connection carries one request at a time. A frame over the limits, a
// frame that does not parse, a cancelled call or a connection that broke
// mid-frame closes the connection; the other side sees it end. The request
// context a handler gets is cancelled when the server closes, not when the
// client goes (no one reads the connection while a handler runs), so a
// handler that waits on anything but the store belongs on HTTP.
package rtchan

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxBody is the largest request or answer body the channel carries: the
// runtime API's own limit on a request body (4 MiB).
const MaxBody = 4 << 20

// maxHead bounds a request's method, path, token and run together.
const maxHead = 64 << 10

// maxRequest and maxAnswer bound a frame's length.
const (
	maxRequest = maxHead + MaxBody
	maxAnswer  = 2 + MaxBody
)

// Request is one call of the runtime API.
type Request struct {
	Method string
	Path   string // the request's path and query, as in an HTTP request line
	Token  string // the bearer token
	Run    string // the worker's run number (wire.HeaderRun)
	Body   []byte
}

// Answer is the handler's status and body.
type Answer struct {
	Status int
	Body   []byte
}

// ErrFrameTooLarge is the error of a frame over the channel's limits.
var ErrFrameTooLarge = errors.New("rtchan: frame over the limit")

// checkRequest refuses a request over the channel's limits.
func checkRequest(r Request) error {
	head := len(r.Method) + len(r.Path) + len(r.Token) + len(r.Run) + 4*binary.MaxVarintLen64
	if head > maxHead || len(r.Body) > MaxBody {
		return fmt.Errorf("%w: a request of %d bytes", ErrFrameTooLarge, head+len(r.Body))
	}
	return nil
}

// appendRequest appends r's frame to buf.
func appendRequest(buf []byte, r Request) ([]byte, error) {
	if err := checkRequest(r); err != nil {
		return buf, err
	}
	at := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	for _, s := range [...]string{r.Method, r.Path, r.Token, r.Run} {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	buf = append(buf, r.Body...)
	binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	return buf, nil
}

// readFrame reads one frame's payload into buf (grown as needed); a frame
// longer than limit is not read. io.EOF means the connection ended between
// frames, io.ErrUnexpectedEOF within one.
func readFrame(br *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return buf, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(limit) {
		return buf, fmt.Errorf("%w: %d bytes announced, at most %d", ErrFrameTooLarge, n, limit)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(br, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf, err
	}
	return buf, nil
}

// errBadFrame is the error of a request frame that does not parse.
var errBadFrame = errors.New("rtchan: bad request frame")

// parseRequest splits a request frame's payload; the strings are copies,
// the body aliases p.
func parseRequest(p []byte) (Request, error) {
	var f [4]string
	for i := range f {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return Request{}, errBadFrame
		}
		f[i] = string(p[k : k+int(n)])
		p = p[k+int(n):]
	}
	return Request{Method: f[0], Path: f[1], Token: f[2], Run: f[3], Body: p}, nil
}
