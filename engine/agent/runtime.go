package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/wire"
)

// runtimeClient talks to the host's runtime API.
type runtimeClient struct {
	base  string
	token string
	run   string // this worker's run number, sent with every request
	http  *http.Client
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

// event reports one event; it returns once the host has durably recorded it.
func (c *runtimeClient) event(ctx context.Context, ev history.Event) error {
	return c.do(ctx, http.MethodPost, "/events", ev, &struct{}{})
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
