package control

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/errkind"
	"github.com/retrylab/retrylab/internal/jsonlimit"
	"github.com/retrylab/retrylab/internal/plural"
)

// Import, audit and export through the host that holds the database: the
// host runs the code engine.LocalTraces runs, on its own store
// (engine.HostTraces), for a process attached to it. Nothing crosses
// whole: an imported file goes to the host as it is read, an export comes
// back as it is written.
//
//	POST /v1/control/import?name=NAME[&format=otlp|temporal]  body: the file, framed (below)
//	POST /v1/control/audit        {"ids": [...], "effects": [...], "window": ns}  answer: the report, gob
//	POST /v1/control/export_otlp  {"ids": [...], "version": "..."}  answer: the document, streamed;
//	     header Retrylab-Executions before it, trailers Retrylab-Spans and Retrylab-Error after
//
// Errors before any work answer 422 with {"error", "kind", "execution"}.

// tracesError is an error of the traces endpoints as it crosses the
// control API: a missing execution is named, so the client can name the
// database as its own user did.
type tracesError struct {
	rpcError
	Execution string `json:"execution,omitempty"`
}

func writeTracesError(w http.ResponseWriter, err error) {
	e := tracesError{rpcError: rpcError{Error: err.Error(), Kind: errkind.KindOf(err)}}
	var me *engine.MissingExecution
	if errors.As(err, &me) {
		e.Execution = me.ID
	}
	writeJSON(w, jsonlimit.Status(err, http.StatusUnprocessableEntity), e)
}

func (s *Server) tracesHandlers(mux engine.RuntimeAPI) {
	mux.Handle("POST /v1/control/import", http.HandlerFunc(s.serveImport))
	mux.Handle("POST /v1/control/audit", http.HandlerFunc(s.serveAudit))
	mux.Handle("POST /v1/control/export_otlp", http.HandlerFunc(s.serveExport))
	mux.Handle("POST /v1/control/imported_events_gob", http.HandlerFunc(s.serveImportedEventsGob))
}

func (s *Server) serveImport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	format := engine.ImportFormat(q.Get("format"))
	if format != "" && !s.host.Traces().Knows(format) {
		writeTracesError(w, fmt.Errorf("bad control request: unknown import format %q", format))
		return
	}
	name := q.Get("name")
	res, err := s.host.Traces().ImportStreamCommitted(name, format, newFrameReader(r.Body), func(res engine.ImportResult) {
		if r.Context().Err() != nil {
			// The client went away (killed, or its connection cut) after
			// it sent the whole file, before the answer: the import is
			// committed all the same, and nobody is there to be told.
			// Say it to whoever watches the host.
			s.host.Traces().Tell(orphanedImport(name, res))
		}
	})
	// The client may still be sending what the import did not read (it
	// stopped at an error): read it, so the client gets the answer rather
	// than a broken pipe.
	_, _ = io.Copy(io.Discard, r.Body)
	if err != nil {
		writeTracesError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// orphanedImport is the host's line for an import committed after its
// client went away.
func orphanedImport(name string, res engine.ImportResult) string {
	return fmt.Sprintf("the import of %s was committed (%s) after the retrylab that sent it went away: its command said nothing",
		name, plural.Count(len(res.Executions), "execution"))
}

// auditArgs is an audit request.
type auditArgs struct {
	IDs     []string      `json:"ids"`
	Effects []string      `json:"effects"`
	Window  time.Duration `json:"window"`
}

func (s *Server) serveAudit(w http.ResponseWriter, r *http.Request) {
	var a auditArgs
	if err := readJSON(r, &a); err != nil {
		writeTracesError(w, fmt.Errorf("bad control request: %w", err))
		return
	}
	rep, err := s.host.Traces().Audit(a.IDs, audit.Options{Effects: a.Effects, Window: a.Window})
	if err != nil {
		writeTracesError(w, err)
		return
	}
	// Gob, not JSON: the report's arguments are raw bytes (not always
	// JSON) that must come back exactly as they are. The findings go one
	// at a time, so neither side holds the report twice (a database of
	// 250 000 duplicates has a report of ~200 MB as JSON).
	w.Header().Set("Content-Type", "application/x-gob")
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := gob.NewEncoder(bw)
	findings := rep.Findings
	rep.Findings = nil
	if enc.Encode(auditHead{Report: rep, Findings: len(findings)}) != nil {
		return
	}
	for _, f := range findings {
		if enc.Encode(f) != nil {
			return
		}
	}
	_ = bw.Flush()
}

// auditHead begins an audit's answer: the report without its findings,
// and how many follow.
type auditHead struct {
	Report   audit.Report
	Findings int
}

// exportArgs is an export request.
type exportArgs struct {
	IDs     []string `json:"ids"`
	Version string   `json:"version"`
	Lines   bool     `json:"lines,omitempty"`
}

func (s *Server) serveExport(w http.ResponseWriter, r *http.Request) {
	var a exportArgs
	if err := readJSON(r, &a); err != nil {
		writeTracesError(w, fmt.Errorf("bad control request: %w", err))
		return
	}
	e, err := s.host.Traces().PlanOTLPExport(a.IDs, engine.OTLPExportOptions{Version: a.Version, Lines: a.Lines})
	if err != nil {
		writeTracesError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retrylab-Executions", strconv.Itoa(e.Executions()))
	// Declared before the header goes: an answer short enough to be sent
	// whole would otherwise go without a chunked body, and lose them.
	w.Header().Set("Trailer", "Retrylab-Spans, Retrylab-Error")
	w.WriteHeader(http.StatusOK)
	spans, err := e.Write(w)
	w.Header().Set("Retrylab-Spans", strconv.Itoa(spans))
	if err != nil {
		w.Header().Set("Retrylab-Error", oneLineOf(err.Error()))
	}
}

// oneLineOf is the first line of s: a trailer holds one.
func oneLineOf(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			return s[:i]
		}
	}
	return s
}

// hostError is a failure to reach the host, not an error the host's work
// gave.
type hostError struct{ error }

func (e *hostError) Unwrap() error { return e.error }

// tracesCall posts a request to a traces endpoint on the stream client (no
// deadline: the work takes as long as the data) and returns the answer, or
// the host's error as the same error LocalTraces would have given.
func (c *Client) tracesCall(path string, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.info.URL+"/v1/control/"+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.info.Token)
	req.Header.Set("Content-Type", contentType)
	resp, err := c.stream.Do(req)
	if err != nil {
		if hostGone(err) {
			return nil, &hostError{fmt.Errorf("the retrylab that holds %s (pid %d) closed before it answered (quit, or killed): %w", c.dbPath, c.info.PID, errHostGone)}
		}
		return nil, &hostError{fmt.Errorf("the retrylab that holds %s (pid %d) stopped answering: %w", c.dbPath, c.info.PID, err)}
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		endpoint, _, _ := strings.Cut(path, "?")
		return nil, &hostError{fmt.Errorf("the retrylab that holds %s (pid %d) is an older version, without /v1/control/%s; close it, or run the same version", c.dbPath, c.info.PID, endpoint)}
	}
	var e tracesError
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e) != nil || e.Error == "" {
		return nil, fmt.Errorf("host pid %d: %s", c.info.PID, resp.Status)
	}
	err = errkind.FromWire(e.Kind, e.Error)
	if e.Execution != "" && errors.Is(err, engine.ErrNoExecution) {
		return nil, &engine.MissingExecution{ID: e.Execution, DB: c.dbPath}
	}
	return nil, err
}

func (c *Client) tracesJSON(path string, args any) (*http.Response, error) {
	body, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return c.tracesCall(path, "application/json", bytes.NewReader(body))
}

// ImportFile sends the regular file at path to the host to import.
func (c *Client) ImportFile(path string, format engine.ImportFormat) (engine.ImportResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return engine.ImportResult{}, err
	}
	defer f.Close()
	return c.importFrom(path, format, f)
}

// ImportStream sends what r holds to the host to import, as it is read.
func (c *Client) ImportStream(name string, r io.Reader) (engine.ImportResult, error) {
	return c.importFrom(name, "", r)
}

func (c *Client) importFrom(name string, format engine.ImportFormat, r io.Reader) (engine.ImportResult, error) {
	q := url.Values{"name": {name}}
	if format != "" {
		q.Set("format", string(format))
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeFrames(pw, r)) }()
	// A host that goes away while r waits for more (a pipe nobody writes
	// to yet) must end the import: net/http does not return until its
	// read of the body does, so the end of the hold ends the body.
	sent := make(chan struct{})
	go func() {
		select {
		case <-c.held: // nil without a hold: never
			pw.CloseWithError(errHostGone) // the request reads errHostGone
		case <-sent:
		}
	}()
	resp, err := c.tracesCall("import?"+q.Encode(), "application/octet-stream", pr)
	close(sent)
	pr.Close() // ends the writer, should the request have stopped reading
	if err != nil {
		var he *hostError
		if errors.As(err, &he) {
			err = fmt.Errorf("%s: %w", name, err) // the importer's errors name the file; these say which
		}
		return engine.ImportResult{}, err
	}
	defer resp.Body.Close()
	var res engine.ImportResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, fmt.Errorf("host pid %d: %w", c.info.PID, err)
	}
	return res, nil
}

// Audit has the host audit its executions; the findings are read from
// the host as the listing is read.
func (c *Client) Audit(ids []string, opts audit.Options) (*audit.Listing, error) {
	resp, err := c.tracesJSON("audit", auditArgs{IDs: ids, Effects: opts.Effects, Window: opts.Window})
	if err != nil {
		return nil, err
	}
	dec := gob.NewDecoder(bufio.NewReaderSize(resp.Body, 64<<10))
	var head auditHead
	if err := dec.Decode(&head); err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("audit through host pid %d: %w", c.info.PID, err)
	}
	left := head.Findings
	next := func() (*audit.Finding, error) {
		if left == 0 {
			return nil, nil
		}
		var f audit.Finding
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("audit through host pid %d: %w", c.info.PID, err)
		}
		left--
		return &f, nil
	}
	return audit.NewListing(head.Report, next, resp.Body.Close), nil
}

// PlanOTLPExport has the host find the executions to export; the export
// is written as the host sends it.
func (c *Client) PlanOTLPExport(ids []string, o engine.OTLPExportOptions) (engine.OTLPExport, error) {
	resp, err := c.tracesJSON("export_otlp", exportArgs{IDs: ids, Version: o.Version, Lines: o.Lines})
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(resp.Header.Get("Retrylab-Executions"))
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("host pid %d: export: no execution count", c.info.PID)
	}
	return &clientExport{resp: resp, executions: n, pid: c.info.PID}, nil
}

// clientExport is an export the host is sending.
type clientExport struct {
	resp       *http.Response
	executions int
	pid        int
}

func (e *clientExport) Executions() int { return e.executions }

func (e *clientExport) Close() error { return e.resp.Body.Close() }

func (e *clientExport) Write(w io.Writer) (int, error) {
	defer e.resp.Body.Close()
	ew := &errWriter{w: w}
	if _, err := io.Copy(ew, e.resp.Body); err != nil {
		if ew.err != nil {
			return 0, ew.err // this side's file or pipe, not the host
		}
		return 0, fmt.Errorf("export from host pid %d: %w", e.pid, err)
	}
	spans, _ := strconv.Atoi(e.resp.Trailer.Get("Retrylab-Spans"))
	if msg := e.resp.Trailer.Get("Retrylab-Error"); msg != "" {
		return spans, errors.New(msg)
	}
	if e.resp.Trailer.Get("Retrylab-Spans") == "" {
		return spans, fmt.Errorf("export from host pid %d: the host stopped before the end", e.pid)
	}
	return spans, nil
}

// An imported file crosses the control API in frames, so that a read
// error on the client's side (a directory named as a file, a failing
// pipe) reaches the importer as the very error it meets reading the file
// itself, and a client that dies is told from a file that ends: a frame is
// a kind byte, a length (uvarint) and that many bytes: 'd' data, 'e' the
// error that ended the reading; 'z' (no length) ends the file.
const (
	frameData = 'd'
	frameErr  = 'e'
	frameEnd  = 'z'
	// frameSize is the most data a frame holds.
	frameSize = 256 << 10
)

// writeFrames writes what r holds to w in frames.
func writeFrames(w io.Writer, r io.Reader) error {
	bw := bufio.NewWriterSize(w, frameSize+binary.MaxVarintLen64+1)
	buf := make([]byte, frameSize)
	head := make([]byte, 1+binary.MaxVarintLen64)
	frame := func(kind byte, data []byte) error {
		head[0] = kind
		n := binary.PutUvarint(head[1:], uint64(len(data)))
		if _, err := bw.Write(head[:1+n]); err != nil {
			return err
		}
		_, err := bw.Write(data)
		return err
	}
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if err := frame(frameData, buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			if err := bw.WriteByte(frameEnd); err != nil {
				return err
			}
			return bw.Flush()
		}
		if rerr != nil {
			if err := frame(frameErr, []byte(rerr.Error())); err != nil {
				return err
			}
			return bw.Flush()
		}
	}
}

// frameReader reads the file out of its frames.
type frameReader struct {
	br   *bufio.Reader
	left uint64 // data left in the current frame
	err  error  // how the file ended, once it has
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// errSenderGone is a file whose sender stopped before its end.
var errSenderGone = errors.New("the attached retrylab stopped sending the file before its end")

func (f *frameReader) Read(p []byte) (int, error) {
	for f.left == 0 {
		if f.err != nil {
			return 0, f.err
		}
		kind, err := f.br.ReadByte()
		if err != nil {
			f.err = errSenderGone
			continue
		}
		if kind == frameEnd {
			// Read on to the body's end, which follows at once: net/http
			// watches the connection from there, so a sender killed while
			// the import commits is known by the request's context.
			_, _ = f.br.Peek(1)
			f.err = io.EOF
			continue
		}
		n, err := binary.ReadUvarint(f.br)
		if err != nil || (kind != frameData && kind != frameErr) || (kind == frameErr && n > 1<<16) {
			f.err = errSenderGone
			continue
		}
		if kind == frameErr {
			msg := make([]byte, n)
			if _, err := io.ReadFull(f.br, msg); err != nil {
				f.err = errSenderGone
				continue
			}
			f.err = errors.New(string(msg))
			continue
		}
		f.left = n
	}
	if uint64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.br.Read(p)
	f.left -= uint64(n)
	if err != nil && n == 0 {
		f.err = errSenderGone
		return 0, f.err
	}
	return n, nil
}

var _ engine.Traces = (*Client)(nil)

// errWriter is w, remembering the error a write to it gave.
type errWriter struct {
	w   io.Writer
	err error
}

func (ew *errWriter) Write(p []byte) (int, error) {
	n, err := ew.w.Write(p)
	if err != nil && ew.err == nil {
		ew.err = err
	}
	return n, err
}

// errHostGone stands for the connection errors of a host that went away
// mid-request, whose words (a Post, two addresses, "use of closed network
// connection") say nothing to the user.
var errHostGone = errors.New("the work was not finished")

// hostGone reports whether err is the host's side of the connection going
// away: closed, reset, refused, or cut before its answer.
func hostGone(err error) bool {
	for _, e := range []error{errHostGone, net.ErrClosed, syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.EPIPE, io.EOF, io.ErrUnexpectedEOF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
