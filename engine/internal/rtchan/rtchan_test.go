package rtchan

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/wire"
)

// serve starts a server of h on a socket in a temp dir, logging to logTo
// if given; it closes with the test.
func serve(t *testing.T, h http.Handler, logTo ...io.Writer) (*Server, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rt.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h}
	if len(logTo) > 0 {
		s.ErrorLog = log.New(logTo[0], "", 0)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v, want ErrServerClosed", err)
		}
	})
	return s, path
}

// echo answers with what reached the handler.
func echo() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/executions/{id}/journal/{step}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "%s %s id=%s step=%s auth=%q run=%q len=%d body=%s", r.Method, r.URL.Path, r.PathValue("id"),
			r.PathValue("step"), r.Header.Get("Authorization"), r.Header.Get(wire.HeaderRun), r.ContentLength, body)
	})
	return mux
}

func TestRoundTrip(t *testing.T) {
	_, path := serve(t, echo())
	c := NewClient(path, time.Minute)
	defer c.Close()
	for i := range 3 { // the same kept connection after the first
		a, err := c.Call(context.Background(), Request{Method: http.MethodPut, Path: "/v1/executions/exec_1/journal/a%2Fb",
			Token: "tok", Run: "2", Body: []byte(fmt.Sprintf(`{"n":%d}`, i))})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`PUT /v1/executions/exec_1/journal/a/b id=exec_1 step=a/b auth="Bearer tok" run="2" len=7 body={"n":%d}`, i)
		if a.Status != http.StatusCreated || string(a.Body) != want {
			t.Errorf("answer %d %q, want 201 %q", a.Status, a.Body, want)
		}
	}
	// No token, no run, no body: no headers, an empty body.
	a, err := c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/v1/executions/x/journal/s"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `GET /v1/executions/x/journal/s id=x step=s auth="" run="" len=0 body=`; string(a.Body) != want {
		t.Errorf("answer %q, want %q", a.Body, want)
	}
	// An unknown path is the handler's 404, as over HTTP.
	a, err = c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/nowhere"})
	if err != nil || a.Status != http.StatusNotFound {
		t.Errorf("unknown path: %d %q %v, want 404", a.Status, a.Body, err)
	}
}

// A request over the limit is refused before it is sent; an answer over
// it is replaced by a 500; a frame announcing more than the limit closes
// the connection.
func TestOversized(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 5 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	})
	_, path := serve(t, mux)
	c := NewClient(path, time.Minute)
	defer c.Close()
	_, err := c.Call(context.Background(), Request{Method: http.MethodPost, Path: "/ok", Body: make([]byte, MaxBody+1)})
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("request over the limit: %v, want ErrFrameTooLarge", err)
	}
	a, err := c.Call(context.Background(), Request{Method: http.MethodPost, Path: "/ok", Body: make([]byte, MaxBody)})
	if err != nil || a.Status != http.StatusOK || string(a.Body) != fmt.Sprint(MaxBody) {
		t.Errorf("request at the limit: %d %q %v", a.Status, a.Body, err)
	}
	a, err = c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/big"})
	if err != nil || a.Status != http.StatusInternalServerError || !strings.Contains(string(a.Body), "over the channel's limit") {
		t.Errorf("answer over the limit: %d %.80q %v, want a 500", a.Status, a.Body, err)
	}

	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], maxRequest+1)
	if _, err := conn.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Read(make([]byte, 16)); err != io.EOF {
		t.Errorf("after a frame over the limit: read %d, %v; want the connection closed", n, err)
	}
}

// Frames that do not parse close their connection; the server goes on
// serving others, and logs nothing.
func TestBadFrames(t *testing.T) {
	var mu sync.Mutex
	var logged bytes.Buffer
	_, path := serve(t, echo(), lockedWriter{&mu, &logged})
	for _, frame := range [][]byte{
		{0, 0, 0, 2, 0xff, 0xff},                     // a varint running off the frame
		{0, 0, 0, 3, 9, 'G', 'E'},                    // a length past the end
		{0, 0, 0, 8, 3, 'G', 'E', 'T', 1, 'x', 0, 0}, // a path without its slash: answered 400, not closed
		{'G', 'E', 'T', ' ', '/', ' ', 'H'},          // HTTP: a length over the limit
		{0, 0, 0, 9, 1},                              // cut short, then closed
	} {
		conn, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(frame); err != nil {
			t.Fatal(err)
		}
		conn.(*net.UnixConn).CloseWrite() // the server reads to the end
		got, _ := io.ReadAll(conn)
		conn.Close()
		if frame[3] == 8 {
			if len(got) < 6 || binary.BigEndian.Uint16(got[4:]) != http.StatusBadRequest {
				t.Errorf("frame %q: answer %q, want a 400", frame, got)
			}
			continue
		}
		if len(got) != 0 {
			t.Errorf("frame %q: answer %q, want the connection closed", frame, got)
		}
	}
	c := NewClient(path, time.Minute)
	defer c.Close()
	if a, err := c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/v1/executions/x/journal/s"}); err != nil || a.Status != http.StatusCreated {
		t.Errorf("after bad frames: %d %v", a.Status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if logged.Len() != 0 {
		t.Errorf("logged %q, want nothing", logged.String())
	}
}

// A handler's panic closes its connection and is logged; the server goes
// on.
func TestHandlerPanic(t *testing.T) {
	var mu sync.Mutex
	var logged bytes.Buffer
	mux := http.NewServeMux()
	mux.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	_, path := serve(t, mux, lockedWriter{&mu, &logged})
	c := NewClient(path, time.Minute)
	defer c.Close()
	if _, err := c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/panic"}); err == nil {
		t.Error("a handler's panic: no error")
	}
	if a, err := c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/ok"}); err != nil || string(a.Body) != "ok" {
		t.Errorf("after a panic: %q %v", a.Body, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "panic serving GET /panic: boom") {
		t.Errorf("logged %q", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// blocking is a handler that holds each request until released, and says
// when one arrived.
type blocking struct {
	arrived chan struct{}
	release chan struct{}
}

func newBlocking() *blocking {
	return &blocking{arrived: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/wait" {
		fmt.Fprint(w, "ok")
		return
	}
	b.arrived <- struct{}{}
	select {
	case <-b.release:
		fmt.Fprint(w, "released")
	case <-r.Context().Done():
		fmt.Fprint(w, "server closed")
	}
}

// Cancelling a call ends it with the context's error while the handler
// still runs; the client then goes on over a new connection.
func TestCancel(t *testing.T) {
	b := newBlocking()
	_, path := serve(t, b)
	c := NewClient(path, time.Minute)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/wait"})
		errc <- err
	}()
	<-b.arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v, want context.Canceled", err)
	}
	close(b.release)
	a, err := c.Call(context.Background(), Request{Method: http.MethodPost, Path: "/wait"})
	if err != nil || string(a.Body) != "released" {
		t.Errorf("after a cancel: %q %v", a.Body, err)
	}
	// A context already done: no request at all.
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/wait"}); !errors.Is(err, context.Canceled) {
		t.Errorf("call with a done context: %v", err)
	}
}

// A deadline, the context's or the client's, ends a call whose answer does
// not come.
func TestDeadline(t *testing.T) {
	b := newBlocking()
	_, path := serve(t, b)
	defer close(b.release)
	c := NewClient(path, time.Hour)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/wait"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the context's deadline: %v, want context.DeadlineExceeded", err)
	}
	short := NewClient(path, 20*time.Millisecond)
	defer short.Close()
	_, err := short.Call(context.Background(), Request{Method: http.MethodPost, Path: "/wait"})
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 20ms") {
		t.Errorf("past the client's timeout: %v", err)
	}
}

// Close answers the request being served (its context cancelled), closes
// idle connections, and the client's later calls fail rather than hang.
func TestServerClose(t *testing.T) {
	b := newBlocking()
	path := filepath.Join(t.TempDir(), "rt.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: b}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c := NewClient(path, time.Minute)
	defer c.Close()
	idle := NewClient(path, time.Minute)
	defer idle.Close()
	if _, err := idle.Call(context.Background(), Request{Method: http.MethodGet, Path: "/ok"}); err != nil {
		t.Fatal(err)
	}
	answer := make(chan Answer, 1)
	go func() {
		a, err := c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/wait"})
		if err != nil {
			t.Error(err)
		}
		answer <- a
	}()
	<-b.arrived
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if a := <-answer; string(a.Body) != "server closed" {
		t.Errorf("in flight at Close: %q", a.Body)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	if _, err := idle.Call(context.Background(), Request{Method: http.MethodGet, Path: "/ok"}); err == nil {
		t.Error("a call on a connection the server closed: no error")
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
}

// Goroutines share one client: each call has a connection of its own and
// gets its own answer.
func TestConcurrentUse(t *testing.T) {
	_, path := serve(t, echo())
	c := NewClient(path, time.Minute)
	defer c.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				body := fmt.Sprintf("g%d-i%d", g, i)
				a, err := c.Call(context.Background(), Request{Method: http.MethodPost, Path: "/v1/executions/e/journal/s",
					Run: fmt.Sprint(g), Body: []byte(body)})
				if err != nil {
					t.Error(err)
					return
				}
				if !strings.HasSuffix(string(a.Body), fmt.Sprintf(`run="%d" len=%d body=%s`, g, len(body), body)) {
					t.Errorf("answer %q to %s", a.Body, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.idle) > maxIdle {
		t.Errorf("%d idle connections kept, at most %d", len(c.idle), maxIdle)
	}
}

// A client that leaves while its request is served (a worker killed
// mid-request) leaves the server serving others, logging nothing, and
// closing without waiting for it.
func TestClientGone(t *testing.T) {
	var mu sync.Mutex
	var logged bytes.Buffer
	b := newBlocking()
	_, path := serve(t, b, lockedWriter{&mu, &logged})
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := appendRequest(nil, Request{Method: http.MethodPost, Path: "/wait", Body: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	<-b.arrived
	conn.Close()
	close(b.release) // the handler ends; its answer has no one to go to
	c := NewClient(path, time.Minute)
	defer c.Close()
	for range 2 {
		if a, err := c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/ok"}); err != nil || string(a.Body) != "ok" {
			t.Errorf("after a client left: %q %v", a.Body, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if logged.Len() != 0 {
		t.Errorf("logged %q, want nothing", logged.String())
	}
}
