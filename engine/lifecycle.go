package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/retrylab/retrylab/engine/errkind"
)

// Two processes on one database share one host: the second attaches to the
// first (engine/control). The first must then not close (and kill the
// second's worker) while the second still works through it. Whoever works
// through the host from outside holds it (Hold) for as long as it works; the
// owner closes with CloseWhenIdle, which waits until no run is live and
// nobody holds the host, then refuses new runs and holds, so nothing can
// slip in between the wait and the close.

// ErrHostClosing means the host is closing and takes no new runs or holds
// (errkind.ErrHostClosing).
var ErrHostClosing = errkind.ErrHostClosing

// Hold keeps the host from closing in CloseWhenIdle until release is
// called (once; later calls do nothing). It fails with ErrHostClosing once
// the host has begun to close.
func (h *Host) Hold() (release func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return nil, ErrHostClosing
	}
	h.holds++
	released := false
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if !released {
			released = true
			h.holds--
		}
	}, nil
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

// CloseWhenIdle waits until no execution has a live worker and nothing
// holds the host, then closes it. While it waits, waiting is called
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
