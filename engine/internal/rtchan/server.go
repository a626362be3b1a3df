package rtchan

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/retrylab/retrylab/engine/wire"
)

// Server serves the runtime channel's requests through Handler. Each
// connection is read, served and answered on one goroutine, one request
// at a time.
type Server struct {
	// Handler answers every request, as it answers the same request over
	// HTTP.
	Handler http.Handler
	// ErrorLog receives a handler's panic (the connection is closed, the
	// server goes on); nil: the log package's standard logger. Nothing else
	// is logged: a connection that ends, even mid-frame (a worker killed),
	// or that sends a bad frame is closed quietly.
	ErrorLog *log.Logger

	once   sync.Once
	ctx    context.Context // the requests' context, cancelled by Close
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]bool // true while it serves a request
	wg        sync.WaitGroup
}

// ErrServerClosed is what Serve returns after Close.
var ErrServerClosed = errors.New("rtchan: server closed")

func (s *Server) init() {
	s.once.Do(func() {
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.listeners = map[net.Listener]struct{}{}
		s.conns = map[*serverConn]bool{}
	})
}

// Serve accepts connections on ln until Close; it returns ErrServerClosed
// then, or the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.init()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.listeners, ln)
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		sc := &serverConn{s: s, c: conn}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return ErrServerClosed
		}
		s.conns[sc] = false
		s.wg.Add(1)
		s.mu.Unlock()
		go sc.serve()
	}
}

// Close stops listening, closes the connections waiting for a request,
// cancels the requests' context and waits until the requests being served
// are answered and their connections closed.
func (s *Server) Close() error {
	s.init()
	s.mu.Lock()
	s.closed = true
	var errs []error
	for ln := range s.listeners {
		errs = append(errs, ln.Close())
	}
	for sc, busy := range s.conns {
		if !busy {
			sc.c.Close()
		}
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return errors.Join(errs...)
}

// serverConn is one client's connection.
type serverConn struct {
	s *Server
	c net.Conn
}

// setBusy marks the connection serving a request (or waiting for one); it
// reports false once the server closes, and the connection must end.
func (sc *serverConn) setBusy(busy bool) bool {
	sc.s.mu.Lock()
	defer sc.s.mu.Unlock()
	if sc.s.closed {
		return false
	}
	sc.s.conns[sc] = busy
	return true
}

func (sc *serverConn) serve() {
	defer func() {
		sc.s.mu.Lock()
		delete(sc.s.conns, sc)
		sc.s.mu.Unlock()
		sc.c.Close()
		sc.s.wg.Done()
	}()
	br := bufio.NewReaderSize(sc.c, 4096)
	var in []byte
	aw := &answerWriter{}
	for {
		var err error
		in, err = readFrame(br, in, maxRequest)
		if err != nil {
			return // the client left, broke a frame, or announced too much
		}
		if !sc.setBusy(true) {
			return
		}
		r, err := parseRequest(in)
		if err != nil {
			return
		}
		if !sc.s.answer(aw, r) {
			return
		}
		if _, err := sc.c.Write(aw.frame()); err != nil {
			return
		}
		if cap(in) > 64<<10 {
			in = nil // a large request's buffer is not kept
		}
		if !sc.setBusy(false) {
			return
		}
	}
}

// answer serves r into aw; it reports false when the handler panicked.
func (s *Server) answer(aw *answerWriter, r Request) (ok bool) {
	aw.reset()
	if !strings.HasPrefix(r.Path, "/") {
		aw.fail(http.StatusBadRequest, "rtchan: the path must start with /")
		return true
	}
	req, err := http.NewRequestWithContext(s.ctx, r.Method, r.Path, bytes.NewReader(r.Body))
	if err != nil {
		aw.fail(http.StatusBadRequest, "rtchan: "+err.Error())
		return true
	}
	req.RequestURI = r.Path
	req.RemoteAddr = "rtchan"
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	if r.Run != "" {
		req.Header.Set(wire.HeaderRun, r.Run)
	}
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if v == http.ErrAbortHandler {
				return
			}
			lg := s.ErrorLog
			if lg == nil {
				lg = log.Default()
			}
			lg.Printf("rtchan: panic serving %s %s: %v\n%s", r.Method, r.Path, v, debug.Stack())
		}
	}()
	s.Handler.ServeHTTP(aw, req)
	if aw.over {
		aw.fail(http.StatusInternalServerError, fmt.Sprintf("rtchan: the answer is over the channel's limit of %d bytes", MaxBody))
	}
	return true
}

// answerWriter is the http.ResponseWriter of a request on the channel: it
// keeps the status and the body, up to MaxBody, in the buffer of the
// answer's frame; headers are dropped.
type answerWriter struct {
	header http.Header
	status int
	buf    []byte // the frame: 6 bytes for its length and the status, then the body
	over   bool
}

// head is the room for the frame's length and the status ahead of the body.
const head = 6

func (aw *answerWriter) reset() {
	if cap(aw.buf) > 64<<10 {
		aw.buf = nil // a large answer's buffer is not kept
	}
	if aw.buf == nil {
		aw.buf = make([]byte, head, 512)
	}
	aw.buf = aw.buf[:head]
	aw.status, aw.over = 0, false
	clear(aw.header)
}

// fail replaces the answer with an error of the channel's own.
func (aw *answerWriter) fail(status int, msg string) {
	aw.reset()
	aw.status = status
	aw.buf = append(aw.buf, msg...)
	aw.buf = append(aw.buf, '\n')
}

func (aw *answerWriter) Header() http.Header {
	if aw.header == nil {
		aw.header = http.Header{}
	}
	return aw.header
}

func (aw *answerWriter) WriteHeader(status int) {
	if aw.status == 0 {
		aw.status = status
	}
}

func (aw *answerWriter) Write(p []byte) (int, error) {
	if aw.status == 0 {
		aw.status = http.StatusOK
	}
	if aw.over || len(aw.buf)-head+len(p) > MaxBody {
		aw.over = true
		return 0, ErrFrameTooLarge
	}
	aw.buf = append(aw.buf, p...)
	return len(p), nil
}

// frame returns the answer's frame.
func (aw *answerWriter) frame() []byte {
	if aw.status == 0 {
		aw.status = http.StatusOK
	}
	binary.BigEndian.PutUint32(aw.buf, uint32(len(aw.buf)-4))
	binary.BigEndian.PutUint16(aw.buf[4:], uint16(aw.status))
	return aw.buf
}
