package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/rtchan"
	"github.com/retrylab/retrylab/engine/wire"
)

// runtimeClient talks to the host's runtime API for one run.
//
// Events that need not be on disk before the worker's next step (a turn
// begun, a call scheduled, a replayed step, an attempt's answer) wait in
// pending and travel with the next request that must be durable before the
// worker goes on: the attempt's permission (before any effect), a journal
// write, an event the worker waits for (a retry's delay, the run's end), or
// a flush (before a planned crash). The host records them in that request's
// commit, in order, before its own event: one fsync for several events. A
// worker killed in between loses only events nothing had acknowledged, as
// if it had died before reporting them.
type runtimeClient struct {
	path  string // "/v1/executions/{id}"
	token string
	run   string // this worker's run number, sent with every request
	via   caller

	// mu orders the requests that carry events (one at a time, so the
	// host records them as the worker reported them) and guards pending.
	mu      sync.Mutex
	pending []history.Event

	// With noJournal (wire.Plan.NoJournal) the execution had no journal
	// record when the run began, so only the steps in written (those this
	// run began to write) can have one; the others are not asked for.
	noJournal bool
	wmu       sync.Mutex
	written   map[string]bool
}

// caller sends one request of the runtime API and returns the answer's
// status and body (up to maxAnswer bytes).
type caller interface {
	call(ctx context.Context, method, path, token, run string, body []byte) (status int, answer []byte, err error)
}

// maxAnswer bounds an answer of the runtime API.
const maxAnswer = 4 << 20

// channelCaller reaches the runtime API through the runtime channel on the
// host's Unix socket: a frame written and its answer read on the caller's
// goroutine, over a kept connection.
type channelCaller struct{ c *rtchan.Client }

func (cc channelCaller) call(ctx context.Context, method, path, token, run string, body []byte) (int, []byte, error) {
	a, err := cc.c.Call(ctx, rtchan.Request{Method: method, Path: path, Token: token, Run: run, Body: body})
	return a.Status, a.Body, err
}

// httpCaller reaches the runtime API over HTTP at base (its URL).
type httpCaller struct {
	base string
	hc   *http.Client
}

func (hc httpCaller) call(ctx context.Context, method, path, token, run string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, hc.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if run != "" {
		req.Header.Set(wire.HeaderRun, run)
	}
	switch {
	case len(body) > 0 && (body[0] == '{' || body[0] == '['):
		req.Header.Set("Content-Type", "application/json")
	case len(body) > 0:
		req.Header.Set("Content-Type", "application/octet-stream") // an event in the store's encoding
	}
	resp, err := hc.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	return resp.StatusCode, data, err
}

// status is how an answer's status reads in an error, as net/http writes
// it ("409 Conflict").
func status(code int) string { return fmt.Sprintf("%d %s", code, http.StatusText(code)) }

func (c *runtimeClient) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = b
	}
	return c.send(ctx, method, path, body, out)
}

// send is do with the body encoded.
func (c *runtimeClient) send(ctx context.Context, method, path string, body []byte, out any) error {
	code, data, err := c.via.call(ctx, method, c.path+path, c.token, c.run, body)
	if err != nil {
		return fmt.Errorf("runtime %s %s: %w", method, path, err)
	}
	if code == http.StatusNotFound && out == nil {
		return errNotFound
	}
	if code/100 != 2 {
		return fmt.Errorf("runtime %s %s: %s: %s", method, path, status(code), bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("runtime %s %s: %w", method, path, err)
		}
	}
	return nil
}

var errNotFound = fmt.Errorf("not found")

// event reports one event after those pending; it returns once the host
// has durably recorded them all.
func (c *runtimeClient) event(ctx context.Context, ev history.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	batch := append(c.take(), ev)
	if len(batch) == 1 {
		// One event goes in the store's compact encoding, which the host
		// decodes in a third of JSON's time (it takes either).
		body, err := history.Encode(ev)
		if err != nil {
			return err
		}
		return c.send(ctx, http.MethodPost, "/events", body, &struct{}{})
	}
	return c.do(ctx, http.MethodPost, "/events", batch, &struct{}{})
}

// later reports an event with the next request that must be durable.
func (c *runtimeClient) later(ev history.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, ev)
}

// flush records the pending events, if any, and returns once they are on
// disk.
func (c *runtimeClient) flush(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	batch := c.take()
	if len(batch) == 0 {
		return nil
	}
	return c.do(ctx, http.MethodPost, "/events", batch, &struct{}{})
}

// take empties pending; c.mu must be held.
func (c *runtimeClient) take() []history.Event {
	batch := c.pending
	c.pending = nil
	return batch
}

// attempt asks for an attempt, with the pending events: when it returns,
// they and AttemptStarted are on disk.
func (c *runtimeClient) attempt(ctx context.Context, req wire.AttemptRequest) (wire.AttemptGrant, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	req.Events = c.take()
	var grant wire.AttemptGrant
	err := c.do(ctx, http.MethodPost, "/attempts", req, &grant)
	return grant, err
}

// putJournal writes a step's record (name is path-escaped), with the
// pending events before its StepRecorded and then after it, in one commit.
func (c *runtimeClient) putJournal(ctx context.Context, name string, rec history.JournalRecord, then ...history.Event) error {
	// Marked before it is sent: from here a read of it asks the host,
	// whose answer depends on whether this write got there first, as it
	// did when every read asked.
	c.wmu.Lock()
	if c.written == nil {
		c.written = map[string]bool{}
	}
	c.written[name] = true
	c.wmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.do(ctx, http.MethodPut, "/journal/"+name, wire.JournalPut{JournalRecord: rec, Events: c.take(), Then: then}, nil)
}

// journal reads a step's recorded result.
func (c *runtimeClient) journal(ctx context.Context, step string) (history.JournalRecord, bool, error) {
	var rec history.JournalRecord
	if c.noJournal {
		c.wmu.Lock()
		asked := c.written[step]
		c.wmu.Unlock()
		if !asked {
			return rec, false, nil
		}
	}
	code, data, err := c.via.call(ctx, http.MethodGet, c.path+"/journal/"+step, c.token, c.run, nil)
	if err != nil {
		return rec, false, fmt.Errorf("runtime journal %s: %w", step, err)
	}
	if code == http.StatusNotFound {
		return rec, false, nil
	}
	if code != http.StatusOK {
		return rec, false, fmt.Errorf("runtime journal %s: %s", step, status(code))
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, false, fmt.Errorf("runtime journal %s: %w", step, err)
	}
	return rec, true, nil
}
