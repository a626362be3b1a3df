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
	"github.com/retrylab/retrylab/engine/wire"
)

// runtimeClient talks to the host's runtime API.
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
	base  string
	token string
	run   string // this worker's run number, sent with every request
	http  *http.Client

	// mu orders the requests that carry events (one at a time, so the
	// host records them as the worker reported them) and guards pending.
	mu      sync.Mutex
	pending []history.Event
}

func (c *runtimeClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set(wire.HeaderRun, c.run)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("runtime %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("runtime %s %s: %w", method, path, err)
	}
	if resp.StatusCode == http.StatusNotFound && out == nil {
		return errNotFound
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("runtime %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
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
		return c.do(ctx, http.MethodPost, "/events", ev, &struct{}{})
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
// pending events before its StepRecorded, in one commit.
func (c *runtimeClient) putJournal(ctx context.Context, name string, rec history.JournalRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.do(ctx, http.MethodPut, "/journal/"+name, wire.JournalPut{JournalRecord: rec, Events: c.take()}, nil)
}

// journal reads a step's recorded result.
func (c *runtimeClient) journal(ctx context.Context, step string) (history.JournalRecord, bool, error) {
	var rec history.JournalRecord
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/journal/"+step, nil)
	if err != nil {
		return rec, false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set(wire.HeaderRun, c.run)
	resp, err := c.http.Do(req)
	if err != nil {
		return rec, false, fmt.Errorf("runtime journal %s: %w", step, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return rec, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return rec, false, fmt.Errorf("runtime journal %s: %s", step, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&rec); err != nil {
		return rec, false, fmt.Errorf("runtime journal %s: %w", step, err)
	}
	return rec, true, nil
}
