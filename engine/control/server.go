package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/errkind"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/internal/jsonlimit"
)

// hostInfo is the content of the file beside the database.
type hostInfo struct {
	PID   int    `json:"pid"`
	URL   string `json:"url"`
	Token string `json:"token"`
	DB    string `json:"db"`
}

// HostFile is where a running host announces itself for a database.
func HostFile(dbPath string) string { return dbPath + ".host" }

func (s *Server) writeHostFile() error {
	abs, err := filepath.Abs(s.dbPath)
	if err != nil {
		abs = s.dbPath
	}
	rt := s.host.Runtime()
	data, err := json.Marshal(hostInfo{PID: os.Getpid(), URL: rt.URL(), Token: rt.Token(), DB: abs})
	if err != nil {
		return err
	}
	path := HostFile(s.dbPath)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("announce host: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("announce host: %w", err)
	}
	return nil
}

// removeHostFile removes the announcement if it is still this host's.
func (s *Server) removeHostFile() { RemoveHostFileOf(s.dbPath, os.Getpid()) }

// RemoveHostFileOf removes dbPath's host announcement if process pid
// wrote it: what a program that killed a host process (chaos's runner)
// does, as the host would have on its way out.
func RemoveHostFileOf(dbPath string, pid int) {
	path := HostFile(dbPath)
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var info hostInfo
	if json.Unmarshal(data, &info) == nil && info.PID == pid {
		_ = os.Remove(path)
	}
}

// rpcError is an error as it crosses the control API.
type rpcError struct {
	Error string `json:"error"`
	Kind  string `json:"kind,omitempty"`
}

// runInfo describes a run across the control API.
type runInfo struct {
	Execution    string         `json:"execution"`
	Number       int            `json:"number"`
	Deduplicated bool           `json:"deduplicated,omitempty"`
	Status       history.Status `json:"status,omitempty"`
	ExitCode     int            `json:"exit_code,omitempty"`
	Error        string         `json:"error,omitempty"`
}

// handlers mounts the control API's routes on the runtime API.
func (s *Server) handlers(mux engine.RuntimeAPI) {
	call := func(name string, fn func(r *http.Request) (any, error)) {
		mux.Handle("POST /v1/control/"+name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			out, err := fn(r)
			if err != nil {
				writeJSON(w, jsonlimit.Status(err, http.StatusUnprocessableEntity), rpcError{Error: err.Error(), Kind: errkind.KindOf(err)})
				return
			}
			writeJSON(w, http.StatusOK, out)
		}))
	}
	type args struct {
		ID        string            `json:"id"`
		Step      string            `json:"step"`
		Name      string            `json:"name"`
		Skip      int               `json:"skip"`
		Limit     int               `json:"limit"`
		From      uint64            `json:"from"`
		Number    int               `json:"number"`
		Point     fault.Point       `json:"point"`
		Duration  durationArg       `json:"duration"`
		Options   engine.RunOptions `json:"options"`
		Execution string            `json:"execution"`
		Query     string            `json:"query"`
	}
	decode := func(r *http.Request) (args, error) {
		var a args
		err := readJSON(r, &a)
		return a, err
	}
	with := func(fn func(a args) (any, error)) func(r *http.Request) (any, error) {
		return func(r *http.Request) (any, error) {
			a, err := decode(r)
			if err != nil {
				return nil, fmt.Errorf("bad control request: %w", err)
			}
			return fn(a)
		}
	}
	// An HTTP client of the control API (an exercise's script) reads
	// lists: an empty one is [], never null, and the events of an
	// execution that does not exist are an error, not an empty list.
	type page[T any] struct {
		List  []T `json:"list"`
		Total int `json:"total"`
	}
	nonNil := func(list []history.Execution) []history.Execution {
		if list == nil {
			return []history.Execution{}
		}
		return list
	}
	call("info", with(func(args) (any, error) {
		return map[string]string{"db": s.DBPath(), "mail_url": s.MailURL(), "crm_url": s.CRMURL()}, nil
	}))
	call("execution", with(func(a args) (any, error) { return s.Execution(a.ID) }))
	call("executions", with(func(a args) (any, error) {
		list, total, err := s.Executions(a.Skip, a.Limit)
		return page[history.Execution]{nonNil(list), total}, err
	}))
	call("find_executions", with(func(a args) (any, error) {
		list, total, err := s.FindExecutions(a.Query, a.Skip, a.Limit)
		return page[history.Execution]{nonNil(list), total}, err
	}))
	call("events", with(func(a args) (any, error) {
		evs, err := s.Events(a.ID, a.From, a.Limit)
		if err == nil && len(evs) == 0 {
			if _, xerr := s.Execution(a.ID); xerr != nil {
				return nil, xerr
			}
			evs = []history.Event{}
		}
		return evs, err
	}))
	call("imported_events", with(func(a args) (any, error) { return s.ImportedEvents(a.ID) }))
	call("journal", with(func(a args) (any, error) { return s.Journal(a.ID) }))
	call("outbox", with(func(args) (any, error) { return s.Outbox() }))
	call("messages_for", with(func(a args) (any, error) { return s.MessagesFor(a.Execution) }))
	call("recent_messages", with(func(a args) (any, error) {
		list, total, err := s.RecentMessages(a.Limit)
		return page[any]{toAny(list), total}, err
	}))
	call("records", with(func(args) (any, error) { return s.Records() }))
	call("state", with(func(args) (any, error) { return s.State() }))
	call("scenarios", with(func(args) (any, error) { return s.Scenarios() }))
	call("start", with(func(a args) (any, error) { return runOut(s.Start(a.Name, a.Options)) }))
	call("resume", with(func(a args) (any, error) { return runOut(s.Resume(a.ID)) }))
	call("wait", func(r *http.Request) (any, error) {
		a, err := decode(r)
		if err != nil {
			return nil, err
		}
		return s.waitRun(r, a.Execution, a.Number)
	})
	call("kill", with(func(a args) (any, error) { return struct{}{}, s.Kill(a.ID) }))
	call("running", with(func(args) (any, error) { return s.Running(), nil }))
	call("index_executions", with(func(args) (any, error) { s.IndexExecutions(); return struct{}{}, nil }))
	call("arm", with(func(a args) (any, error) {
		p, err := fault.Parse(string(a.Point))
		if err != nil {
			return nil, err
		}
		s.Arm(p)
		return struct{}{}, nil
	}))
	call("disarm", with(func(args) (any, error) { s.Disarm(); return struct{}{}, nil }))
	call("armed", with(func(args) (any, error) { return s.Armed(), nil }))
	call("delete_journal", with(func(a args) (any, error) { return struct{}{}, s.DeleteJournal(a.ID, a.Step) }))
	call("advance", with(func(a args) (any, error) { return struct{}{}, s.AdvanceClock(time.Duration(a.Duration)) }))
	call("world_offset", with(func(args) (any, error) { return s.WorldOffset(), nil }))
	call("reset_world", with(func(args) (any, error) { return struct{}{}, s.ResetWorld() }))
	call("reset", with(func(args) (any, error) { return struct{}{}, s.Reset() }))
	mux.Handle("GET /v1/control/notices", http.HandlerFunc(s.streamNotices))
	mux.Handle("GET /v1/control/hold", http.HandlerFunc(s.serveHold))
	mux.Handle("GET /v1/control/copy", http.HandlerFunc(s.serveCopy))
	mux.Handle("GET /v1/control/state", http.HandlerFunc(s.handleState))
	s.tracesHandlers(mux)
}

func toAny[T any](list []T) []any {
	out := make([]any, len(list))
	for i, v := range list {
		out[i] = v
	}
	return out
}

func runOut(r *engine.Run, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	info := runInfo{Execution: r.Execution, Number: r.Number, Deduplicated: r.Deduplicated}
	if r.Deduplicated {
		info.Status = r.Result().Status
	}
	return info, nil
}

// waitRun answers when run number of an execution has ended (or the caller
// goes away), with how it ended.
func (s *Server) waitRun(r *http.Request, id string, number int) (any, error) {
	notices, stop := s.Subscribe(64)
	defer stop()
	for {
		x, err := s.Execution(id)
		if err != nil {
			return nil, err
		}
		if x.Runs > number || (x.Runs == number && x.Status != history.StatusRunning) {
			info := runInfo{Execution: id, Number: number, Status: x.Status, Error: x.Error}
			if x.Runs > number {
				info.Status = history.StatusKilled
			}
			if info.Status == history.StatusKilled {
				info.ExitCode = engine.ExitKilled
			}
			return info, nil
		}
		select {
		case _, ok := <-notices:
			if !ok {
				return nil, errors.New("the host is closing")
			}
		case <-time.After(time.Second):
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
}

// streamNotices sends every notice as one JSON line until the client goes.
func (s *Server) streamNotices(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	notices, stop := s.Subscribe(1 << 14)
	defer stop()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	enc := json.NewEncoder(w)
	for {
		select {
		case n, ok := <-notices:
			if !ok {
				return
			}
			if err := enc.Encode(n); err != nil {
				return
			}
			// What else is waiting goes in the same write: a receiver
			// storing spans announces dozens of executions a commit, and a
			// write (and the client's read) for each cost both sides more
			// than the notices themselves.
			more := encodeWaiting(enc, notices)
			flusher.Flush()
			if !more {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// encodeWaiting encodes the notices already waiting in notices, at most a
// buffer's worth; false when the stream is done (closed, or a write
// failed), once what it encoded is written.
func encodeWaiting(enc *json.Encoder, notices <-chan notice.Notice) bool {
	for range cap(notices) {
		select {
		case n, ok := <-notices:
			if !ok {
				return false
			}
			if enc.Encode(n) != nil {
				return false
			}
		default:
			return true
		}
	}
	return true
}
