package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/retrylab/retrylab/engine/errkind"
)

// Two processes on one database share one host: the second attaches to the
// first. The first must then not close (and kill the second's worker) while
// the second still works through it. An attached process holds the host
// (Client.Hold) for as long as it works; the owner closes with CloseWhenIdle,
// which waits until no run is live and nobody holds the host, then refuses
// new runs and holds, so nothing can slip in between the wait and the close.

// ErrHostClosing means the host is closing and takes no new runs or holds
// (errkind.ErrHostClosing).
var ErrHostClosing = errkind.ErrHostClosing

// Holds counts the attached processes holding the host open.
func (h *Host) Holds() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds
}

// idleLocked reports whether nothing keeps the host open: no live worker and
// no hold. h.mu must be held.
func (h *Host) idleLocked() bool {
	if h.holds > 0 {
		return false
	}
	for _, st := range h.execs {
		if st.worker != nil {
			return false
		}
	}
	return true
}

// CloseWhenIdle waits until no execution has a live worker and no attached
// process holds the host, then closes it. While it waits, waiting is called
// (once, when the wait starts) with the live executions and the number of
// holds. If ctx ends first, it closes at once, killing live workers as
// Close does, and returns ctx's error (joined with Close's): the caller can
// tell a wait cut short from an idle close.
func (h *Host) CloseWhenIdle(ctx context.Context, waiting func(running []string, holds int)) error {
	told := false
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		h.mu.Lock()
		if h.idleLocked() {
			h.closing = true
			h.mu.Unlock()
			break
		}
		holds := h.holds
		h.mu.Unlock()
		if !told && waiting != nil {
			running := h.Running()
			slices.Sort(running)
			waiting(running, holds)
			told = true
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), h.Close())
		case <-tick.C:
		}
	}
	return h.Close()
}

// serveHold counts the caller as holding the host until it goes away (or
// the host closes), so a process that dies releases its hold with its
// connection. The first line of the answer says the hold is in place.
func (h *Host) serveHold(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	// Subscribed before the hold counts, so the host's close ends it.
	closed, stop := h.Subscribe(1)
	defer stop()
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		writeJSON(w, http.StatusServiceUnavailable, rpcError{Error: ErrHostClosing.Error(), Kind: errkind.KindOf(ErrHostClosing)})
		return
	}
	h.holds++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.holds--
		h.mu.Unlock()
	}()
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
		if errors.Is(errkind.FromWire(e.Kind, e.Error), ErrHostClosing) {
			return ErrHostClosing
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

// CopyDB writes a consistent copy of the database to w (see store.CopyTo):
// what a reader in another process opens, since the host holds the file.
func (h *Host) CopyDB(w io.Writer) error {
	_, err := h.db.CopyTo(w)
	return err
}

// serveCopy streams a copy of the database.
func (h *Host) serveCopy(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	// An error after the first byte can only cut the stream short, which
	// the client sees as a copy that does not open.
	_ = h.CopyDB(w)
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

// ControlURL is the base of the control API (POST /v1/control/...), which
// takes the token in the host file as a bearer token.
func (h *Host) ControlURL() string { return h.runtimeURL }

// ControlURL is the base of the attached host's control API.
func (c *Client) ControlURL() string { return c.info.URL }
