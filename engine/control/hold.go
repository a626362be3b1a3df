package control

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/errkind"
)

// Two processes on one database share one host: the second attaches to the
// first. The first must then not close (and kill the second's worker) while
// the second still works through it: an attached process holds the host
// (Client.Hold, engine.Host.Hold) for as long as it works, and the owner
// closes with CloseWhenIdle, which waits for the holds.

// serveHold counts the caller as holding the host until it goes away (or
// the host closes), so a process that dies releases its hold with its
// connection. The first line of the answer says the hold is in place.
func (s *Server) serveHold(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	// Subscribed before the hold counts, so the host's close ends it.
	closed, stop := s.Subscribe(1)
	defer stop()
	release, err := s.host.Hold()
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, rpcError{Error: err.Error(), Kind: errkind.KindOf(err)})
		return
	}
	defer release()
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintln(w, "held")
	flusher.Flush()
	for {
		select {
		case _, ok := <-closed:
			if !ok {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// Hold keeps the host from closing until this client is closed or its
// process dies. It fails with ErrHostClosing (or ErrNoHost when the host is
// already gone): the caller should then open the database itself.
func (c *Client) Hold() error {
	ctx, cancel := context.WithCancel(c.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.info.URL+"/v1/control/hold", nil)
	if err != nil {
		cancel()
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.info.Token)
	resp, err := c.stream.Do(req)
	if err != nil {
		cancel()
		return fmt.Errorf("%w (pid %d: %v)", ErrNoHost, c.info.PID, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e rpcError
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e)
		resp.Body.Close()
		cancel()
		if e.Kind == "closing" {
			return engine.ErrHostClosing
		}
		return fmt.Errorf("hold host pid %d: %s", c.info.PID, resp.Status)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "held\n" {
		resp.Body.Close()
		cancel()
		return fmt.Errorf("%w (pid %d closed while attaching)", ErrNoHost, c.info.PID)
	}
	c.held = make(chan struct{})
	go func() {
		defer close(c.held)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, br)
	}()
	c.release = cancel
	return nil
}

// serveCopy streams a consistent copy of the database (see store.CopyTo):
// what a reader in another process opens, since the host holds the file.
func (s *Server) serveCopy(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	// An error after the first byte can only cut the stream short, which
	// the client sees as a copy that does not open.
	_, _ = s.host.Store().CopyTo(w)
}

// CopyDB writes a consistent copy of the host's database to w.
func (c *Client) CopyDB(w io.Writer) error {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.info.URL+"/v1/control/copy", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.info.Token)
	resp, err := c.stream.Do(req)
	if err != nil {
		return fmt.Errorf("copy the database from host pid %d: %w", c.info.PID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("copy the database from host pid %d: %s", c.info.PID, resp.Status)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("copy the database from host pid %d: %w", c.info.PID, err)
	}
	return nil
}

// durationArg is a duration in a control request: nanoseconds, as Client
// sends it, or a string such as "25h" for an HTTP client written by hand.
type durationArg time.Duration

func (d *durationArg) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = durationArg(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want nanoseconds or a string like \"25h\", not %s", b)
	}
	*d = durationArg(n)
	return nil
}

// ControlURL is the base of the attached host's control API.
func (c *Client) ControlURL() string { return c.info.URL }
