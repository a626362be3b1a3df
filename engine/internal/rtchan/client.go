package rtchan

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// Client calls the runtime API through a Unix socket. Calls may come from
// several goroutines at once: each takes a kept connection of its own (or
// dials one), and at most maxIdle connections are kept between calls.
type Client struct {
	socket  string
	timeout time.Duration

	mu     sync.Mutex
	idle   []*clientConn
	closed bool
}

// maxIdle is how many connections a client keeps between calls: one per
// goroutine of a worker that calls at the same time, which is rarely more
// than a few.
const maxIdle = 4

// NewClient makes a client of the socket at path; every call ends with an
// error after timeout (0: only the call's context bounds it).
func NewClient(path string, timeout time.Duration) *Client {
	return &Client{socket: path, timeout: timeout}
}

// clientConn is one kept connection and its buffers.
type clientConn struct {
	c        net.Conn
	br       *bufio.Reader
	wbuf     []byte
	deadline bool // a deadline is set on c
}

// aLongTimeAgo is a deadline that has passed: setting it makes a blocked
// read or write return at once.
var aLongTimeAgo = time.Unix(1, 0)

// Call sends r and returns the answer, whatever its status. It writes the
// request and reads the answer on the calling goroutine. When ctx is done
// or the timeout passes first, the connection is closed and Call returns
// an error that wraps the context's (context.Canceled,
// context.DeadlineExceeded); the host may still have acted on the request,
// as when a worker dies after sending it.
func (c *Client) Call(ctx context.Context, r Request) (Answer, error) {
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	if err := checkRequest(r); err != nil {
		return Answer{}, err // before a connection is taken or dialled
	}
	cn, err := c.get(ctx)
	if err != nil {
		return Answer{}, err
	}
	cn.wbuf, err = appendRequest(cn.wbuf[:0], r)
	if err != nil {
		c.put(cn)
		return Answer{}, err
	}
	// The earlier of the context's deadline and the client's timeout
	// bounds the call, as a deadline on the connection: no timer
	// goroutine, no context of its own.
	d, ok := ctx.Deadline()
	own := false
	if c.timeout > 0 {
		if t := time.Now().Add(c.timeout); !ok || t.Before(d) {
			d, ok, own = t, true, true
		}
	}
	if ok || cn.deadline {
		_ = cn.c.SetDeadline(d) // zero when ok is false: none
		cn.deadline = ok
	}
	var stop func() bool
	if ctx.Done() != nil {
		conn := cn.c
		stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	}
	a, err := cn.roundTrip()
	if stop != nil && !stop() {
		// The context ended meanwhile: the connection's deadline has
		// passed or is about to, and the connection cannot be kept.
		cn.c.Close()
		if err == nil {
			return a, nil // the answer came first
		}
		return Answer{}, fmt.Errorf("rtchan %s %s: %w", r.Method, r.Path, ctx.Err())
	}
	if err != nil {
		cn.c.Close()
		timedOut := errors.Is(err, os.ErrDeadlineExceeded)
		switch {
		case timedOut && own:
			err = fmt.Errorf("no answer within %s: %w", c.timeout, err)
		case timedOut:
			err = context.DeadlineExceeded // the context's, whose own timer may not have fired yet
		case ctx.Err() != nil:
			err = ctx.Err()
		}
		return Answer{}, fmt.Errorf("rtchan %s %s: %w", r.Method, r.Path, err)
	}
	c.put(cn)
	return a, nil
}

// roundTrip writes the request in cn.wbuf and reads its answer.
func (cn *clientConn) roundTrip() (Answer, error) {
	if _, err := cn.c.Write(cn.wbuf); err != nil {
		return Answer{}, err
	}
	p, err := readFrame(cn.br, nil, maxAnswer)
	if err != nil {
		return Answer{}, err
	}
	if len(p) < 2 {
		return Answer{}, errors.New("rtchan: short answer frame")
	}
	return Answer{Status: int(binary.BigEndian.Uint16(p)), Body: p[2:]}, nil
}

// get takes a kept connection or dials one.
func (c *Client) get(ctx context.Context) (*clientConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, net.ErrClosed
	}
	if n := len(c.idle); n > 0 {
		cn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return nil, err
	}
	return &clientConn{c: conn, br: bufio.NewReaderSize(conn, 4096)}, nil
}

// put keeps a connection for a later call, or closes it.
func (c *Client) put(cn *clientConn) {
	c.mu.Lock()
	if !c.closed && len(c.idle) < maxIdle {
		c.idle = append(c.idle, cn)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	cn.c.Close()
}

// Close closes the kept connections; calls in progress end on their own
// connections, and later calls fail.
func (c *Client) Close() error {
	c.mu.Lock()
	idle := c.idle
	c.idle, c.closed = nil, true
	c.mu.Unlock()
	for _, cn := range idle {
		cn.c.Close()
	}
	return nil
}
