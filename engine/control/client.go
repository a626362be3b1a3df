package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/errkind"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
)

// ErrNoHost means no live host has announced itself for the database.
var ErrNoHost = errors.New("no running retrylab host for this database")

// Client is an engine.Service attached to a host running in another process.
type Client struct {
	info   hostInfo
	urls   map[string]string // db, mail_url, crm_url as the host reports them
	dbPath string
	http   *http.Client // for calls that answer at once
	stream *http.Client // for waits and the notice stream
	ctx    context.Context
	cancel context.CancelFunc
	// release ends the hold taken by Hold, if any.
	release context.CancelFunc
	// held is closed when the hold taken by Hold ends: the host went away
	// (quit, killed) or the client let it go. Nil without a hold.
	held chan struct{}
}

// Dial attaches to the host that owns dbPath, if one is running.
func Dial(dbPath string) (*Client, error) {
	data, err := os.ReadFile(HostFile(dbPath))
	if err != nil {
		return nil, ErrNoHost
	}
	var info hostInfo
	if err := json.Unmarshal(data, &info); err != nil || info.URL == "" || info.PID <= 0 {
		return nil, ErrNoHost
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil, ErrNoHost // a host that died without cleaning up
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{info: info, dbPath: dbPath, http: &http.Client{Timeout: 30 * time.Second}, stream: &http.Client{}, ctx: ctx, cancel: cancel}
	probe := &http.Client{Timeout: 2 * time.Second}
	if err := c.callWith(probe, "info", nil, &c.urls); err != nil {
		cancel()
		return nil, fmt.Errorf("%w (pid %d did not answer: %v)", ErrNoHost, info.PID, err)
	}
	return c, nil
}

// HostPID is the process id of the host this client is attached to.
func (c *Client) HostPID() int { return c.info.PID }

func (c *Client) call(name string, in, out any) error { return c.callWith(c.http, name, in, out) }

func (c *Client) callWith(hc *http.Client, name string, in, out any) error {
	if in == nil {
		in = struct{}{}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.info.URL+"/v1/control/"+name, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.info.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return c.callError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return c.callError(err)
	}
	if resp.StatusCode != http.StatusOK {
		var e rpcError
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return errkind.FromWire(e.Kind, e.Error)
		}
		return fmt.Errorf("host pid %d: %s", c.info.PID, resp.Status)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("host pid %d: %w", c.info.PID, err)
		}
	}
	return nil
}

type idArgs struct {
	ID        string `json:"id,omitempty"`
	Step      string `json:"step,omitempty"`
	Execution string `json:"execution,omitempty"`
}

// Execution reads one execution's record.
func (c *Client) Execution(id string) (history.Execution, error) {
	var x history.Execution
	return x, c.call("execution", idArgs{ID: id}, &x)
}

// Executions lists executions newest first.
func (c *Client) Executions(skip, limit int) ([]history.Execution, int, error) {
	var p struct {
		List  []history.Execution `json:"list"`
		Total int                 `json:"total"`
	}
	err := c.call("executions", map[string]int{"skip": skip, "limit": limit}, &p)
	return p.List, p.Total, err
}

// FindExecutions lists the executions that answer a filter, newest first,
// from the host's index.
func (c *Client) FindExecutions(query string, skip, limit int) ([]history.Execution, int, error) {
	var p struct {
		List  []history.Execution `json:"list"`
		Total int                 `json:"total"`
	}
	err := c.call("find_executions", map[string]any{"query": query, "skip": skip, "limit": limit}, &p)
	return p.List, p.Total, err
}

// IndexExecutions has the host start building the index FindExecutions
// answers from (Host.IndexExecutions), so the first filter need not wait.
func (c *Client) IndexExecutions() { _ = c.call("index_executions", nil, nil) }

// Events reads an execution's history.
func (c *Client) Events(id string, from uint64, limit int) ([]history.Event, error) {
	var out []history.Event
	err := c.call("events", map[string]any{"id": id, "from": from, "limit": limit}, &out)
	return out, err
}

// Journal lists journal records.
func (c *Client) Journal(id string) ([]engine.JournalEntry, error) {
	var out []engine.JournalEntry
	return out, c.call("journal", idArgs{ID: id}, &out)
}

// Outbox lists every delivered message.
func (c *Client) Outbox() ([]world.Message, error) {
	var out []world.Message
	return out, c.call("outbox", nil, &out)
}

// MessagesFor lists the messages an execution caused.
func (c *Client) MessagesFor(execution string) ([]world.Message, error) {
	var out []world.Message
	return out, c.call("messages_for", idArgs{Execution: execution}, &out)
}

// RecentMessages lists the newest messages and the outbox's size.
func (c *Client) RecentMessages(limit int) ([]world.Message, int, error) {
	var p struct {
		List  []world.Message `json:"list"`
		Total int             `json:"total"`
	}
	err := c.call("recent_messages", map[string]int{"limit": limit}, &p)
	return p.List, p.Total, err
}

// Records lists the CRM's rows.
func (c *Client) Records() ([]world.Record, error) {
	var out []world.Record
	return out, c.call("records", nil, &out)
}

// State reads the whole state.
func (c *Client) State() (engine.State, error) {
	var s engine.State
	return s, c.call("state", nil, &s)
}

// Scenarios lists the host's catalogue.
func (c *Client) Scenarios() ([]*scenario.Scenario, error) {
	var out []*scenario.Scenario
	return out, c.call("scenarios", nil, &out)
}

// Start asks the host to run a scenario.
func (c *Client) Start(name string, opts engine.RunOptions) (*engine.Run, error) {
	return c.run("start", map[string]any{"name": name, "options": opts})
}

// Resume asks the host to resume an execution.
func (c *Client) Resume(id string) (*engine.Run, error) { return c.run("resume", idArgs{ID: id}) }

func (c *Client) run(method string, args any) (*engine.Run, error) {
	var info runInfo
	if err := c.call(method, args, &info); err != nil {
		return nil, err
	}
	r, ended := engine.NewRun(info.Execution, info.Number, info.Deduplicated)
	if info.Deduplicated {
		ended(engine.RunResult{Status: info.Status})
		return r, nil
	}
	go func() {
		var end runInfo
		err := c.callWith(c.stream, "wait", map[string]any{"execution": info.Execution, "number": info.Number}, &end)
		ended(engine.RunResult{Status: end.Status, ExitCode: end.ExitCode, Err: err})
	}()
	return r, nil
}

// Kill asks the host to kill an execution's worker.
func (c *Client) Kill(id string) error { return c.call("kill", idArgs{ID: id}, nil) }

// Running lists executions with a live worker.
func (c *Client) Running() []string {
	var out []string
	_ = c.call("running", nil, &out)
	return out
}

// Arm queues a fault for the next tool call.
func (c *Client) Arm(p fault.Point) { _ = c.call("arm", map[string]string{"point": string(p)}, nil) }

// Disarm clears the armed faults.
func (c *Client) Disarm() { _ = c.call("disarm", nil, nil) }

// Armed lists the armed faults.
func (c *Client) Armed() []fault.Point {
	var out []fault.Point
	_ = c.call("armed", nil, &out)
	return out
}

// DeleteJournal removes a step's journal record.
func (c *Client) DeleteJournal(id, step string) error {
	return c.call("delete_journal", idArgs{ID: id, Step: step}, nil)
}

// AdvanceClock moves the world clock forward.
func (c *Client) AdvanceClock(d time.Duration) error {
	return c.call("advance", map[string]time.Duration{"duration": d}, nil)
}

// WorldOffset is how far the world clock runs ahead.
func (c *Client) WorldOffset() time.Duration {
	var d time.Duration
	_ = c.call("world_offset", nil, &d)
	return d
}

// ResetWorld empties the providers.
func (c *Client) ResetWorld() error { return c.call("reset_world", nil, nil) }

// Reset wipes everything.
func (c *Client) Reset() error { return c.call("reset", nil, nil) }

// DBPath is the database the host owns.
func (c *Client) DBPath() string { return c.urls["db"] }

// MailURL is the host's mail API.
func (c *Client) MailURL() string { return c.urls["mail_url"] }

// CRMURL is the host's CRM.
func (c *Client) CRMURL() string { return c.urls["crm_url"] }

var _ engine.Service = (*Client)(nil)

// Close detaches (releasing a hold); the host goes on.
func (c *Client) Close() error {
	if c.release != nil {
		c.release()
	}
	c.cancel()
	return nil
}

// CloseWhenIdle closes at once: an attached process runs nothing of its own
// that others wait on (its runs live in the host that owns the database).
func (c *Client) CloseWhenIdle(context.Context, func(running []string, holds int)) error {
	return c.Close()
}

// Subscribe follows the host's notices over a stream.
func (c *Client) Subscribe(buffer int) (<-chan notice.Notice, func()) {
	ch := make(chan notice.Notice, max(1, buffer))
	ctx, cancel := context.WithCancel(c.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.info.URL+"/v1/control/notices", nil)
	if err != nil {
		cancel()
		close(ch)
		return ch, func() {}
	}
	req.Header.Set("Authorization", "Bearer "+c.info.Token)
	resp, err := c.stream.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		if resp != nil {
			resp.Body.Close()
		}
		cancel()
		close(ch)
		return ch, func() {}
	}
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var n notice.Notice
			if decodeNotice(sc.Bytes(), &n) != nil {
				continue
			}
			select {
			case ch <- n:
			default:
				// A slow reader loses notices and is told to re-read.
				select {
				case ch <- notice.Notice{Lagged: true}:
				default:
				}
			}
		}
		if ctx.Err() == nil {
			// The stream ended without the reader leaving: the host quit
			// or was killed. The reader's last notice says so.
			gone := notice.Notice{Gone: true, Host: fmt.Sprintf("not live: the retrylab that held %s (pid %d) quit or was killed; "+
				"what shows is as it was (quit, then run the command again)", c.dbPath, c.info.PID)}
			select {
			case ch <- gone:
			case <-ctx.Done():
			}
		}
	}()
	return ch, cancel
}

// decodeNotice reads one line of the notices stream into n. Nearly every
// line is an execution's id alone, {"execution":"…"}: a receiver storing
// spans publishes one for each execution it stores, thousands a second,
// and encoding/json took an eighth of an attached explorer's CPU reading
// them. Those are read here; a line of any other shape, or an id the
// encoder escaped (a quote, a backslash, <, >, &, a control or invalid
// byte), goes to encoding/json.
func decodeNotice(line []byte, n *notice.Notice) error {
	const head, tail = `{"execution":"`, `"}`
	if len(line) >= len(head)+len(tail) && bytes.HasPrefix(line, []byte(head)) && bytes.HasSuffix(line, []byte(tail)) {
		id := line[len(head) : len(line)-len(tail)]
		plain := utf8.Valid(id)
		for _, c := range id {
			if c < 0x20 || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			*n = notice.Notice{Execution: string(id)}
			return nil
		}
	}
	return json.Unmarshal(line, n)
}

// ImportedEvents asks the host for an imported execution's trace, in gob:
// a call's arguments and result are raw bytes as the source wrote them
// (spaced JSON, or not JSON at all), which JSON would re-encode.
func (c *Client) ImportedEvents(id string) ([]trace.Event, error) {
	resp, err := c.tracesJSON("imported_events_gob", idArgs{ID: id})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []trace.Event
	if err := gob.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("host pid %d: %w", c.info.PID, err)
	}
	return out, nil
}

// WriteState streams the host's State from its control API.
func (c *Client) WriteState(w io.Writer) error {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.info.URL+"/v1/control/state", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.info.Token)
	resp, err := c.stream.Do(req)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("state: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if msg := resp.Trailer.Get("Retrylab-Error"); msg != "" {
		return fmt.Errorf("state: %s", msg)
	}
	return nil
}

// callError is a control call's failure to reach the host: a host that
// went away (quit, or killed) is said in words, the rest as they came.
func (c *Client) callError(err error) error {
	if hostGone(err) {
		return &LostHostError{DB: c.dbPath, PID: c.info.PID, cause: err}
	}
	return fmt.Errorf("host pid %d: %w", c.info.PID, err)
}

// LostHostError is a host that went away (quit, or killed) while a
// command was talking to it.
type LostHostError struct {
	DB    string // the database the host held
	PID   int
	cause error
}

func (e *LostHostError) Error() string {
	return fmt.Sprintf("the host of %s (pid %d) is gone: run the command again", e.DB, e.PID)
}

func (e *LostHostError) Unwrap() error { return e.cause }
