package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/fetch"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/store"
)

func (a *app) importCmd() *cobra.Command {
	var ff fetchFlags
	cmd := &cobra.Command{
		Use:   "import FILE|URL...",
		Short: "Load OpenTelemetry traces and Temporal histories of real agents into the database",
		Long: `Import OpenTelemetry traces into the database, beside retrylab's own
executions, marked as imported with the file they came from. Each file may be
OTLP/JSON ({"resourceSpans": ...}; other signals in the same document, such as
resourceLogs, are ignored), the OTLP file exporter's JSON Lines (one
TracesData a line), OTLP protobuf, or gzip of any of them; the encoding is
recognised from the content.

An execution is a trace, or the traces that share gen_ai.conversation.id.
Spans are read as the GenAI semantic conventions (old and new names),
OpenInference, OpenLLMetry and Google ADK write them: execute_tool spans are
the attempts of tool calls; invoke_agent spans and model calls are turns.

Each file is imported whole or not at all: a file that fails leaves nothing
behind, and the error names the file, the line (JSON Lines) and the span.
Spans already imported are skipped, so importing a file twice changes
nothing. A span whose parent never arrives is kept and marked as an orphan.
Refused: malformed JSON or protobuf, ids of the wrong length, a span id
used twice with different content, a span that ends before it starts or
whose times lie outside 2000-2200, a JSON line over 64 MiB, a whole
document or protobuf file over 512 MiB (write JSON Lines instead).

A file may also be a Temporal workflow history, recognised by its content:
'temporal workflow show --output json' ({"events": ...}) or the Web UI's
download ({"history": {"events": ...}}), gzip-compressed or not. A workflow
is an execution (the runs of a continue-as-new or retry chain are its runs,
imported from one file each), a workflow task a turn, an activity a tool
call. Temporal keeps only an activity's last attempt: for attempt N the
N-1 before it are shown as not kept, with the last failure on attempt N-1.
Local activities, child workflows, timers, signals and continue-as-new are
on the timeline. A Web UI download in newest-first order is read oldest
first. Refused, naming the event: a history that does not start at event 1
or has holes (cut short), events out of order, an event after the workflow
closed, an event type this version does not know (a newer server) unless
the server marks it workerMayIgnore (then it is kept, and 'show' lists it
as skipped). A running workflow's history is imported as running;
importing a later download of it adds the new events.

A file may also be a trace downloaded from Grafana Tempo (its API's
{"batches": ...} or {"trace": ...}) or from Jaeger (the UI's download and API
v1's {"data": [...]}, API v3's {"result": ...}), recognised by its content;
its spans are imported as OTLP's, under the same rules.

FILE - is standard input; it and a pipe (/dev/stdin, <(...)) are read once,
as they come: retrylab export --otlp - | retrylab --db other.db import -

A URL (http:// or https://) is fetched and read as a file is: a trace
from Tempo's API (http://tempo:3200/api/traces/ID, /api/v2/traces/ID),
from Jaeger's (http://jaeger:16686/api/traces/ID, /api/v3/traces/ID), or
any URL that answers a file of the formats above. A request may take
--timeout, its answer read whole, and answer --max-mib at most; a status
other than 2xx is one line naming the URL ("HTTP 404 from URL: not
found"), and nothing is stored. --header 'Authorization: Bearer TOKEN'
(repeatable, any header) is sent with every request; $RETRYLAB_FETCH_AUTHORIZATION,
when set, is the Authorization header's value unless --header gives one.
A URL's user:password@ is sent as Basic authentication and shown and
stored as user:xxxxx@. Headers and credentials follow a redirect only to
the same scheme, host and port.

--tempo URL searches Tempo (GET /api/search) with --query's TraceQL,
--jaeger URL searches Jaeger (GET /api/traces) for --service's traces,
both over the last --since, --limit traces at most; each trace found is
fetched by its id and imported on its own, whole or not at all, a line
each (on a terminal, standard error shows which is being fetched). With
--follow the search runs again every --every and imports each new trace
until interrupted; a trace that failed is tried again when a later search
finds it, 3 times in all. --query, --service, --since, --limit, --follow
and --every are a search's only.

While another retrylab holds the database (the explorer, serve), the files
are sent to it as they are read and it imports them, under the same rules,
with the same output; a running explorer shows the new executions arrive.

Exit status: 0 when every file, URL and trace found was imported, 1 when
any failed, 2 for a flag given wrongly, 130 when interrupted (Ctrl-C).`,
		Example: "  retrylab import traces.json\n  retrylab import http://tempo:3200/api/traces/4bf92f3577b34da6a3ce929d0e0e4736\n  retrylab import --tempo http://tempo:3200 --query '{ span.gen_ai.operation.name = \"execute_tool\" }' --since 1h\n  retrylab import --jaeger http://jaeger:16686 --service mailer-agent --limit 50\n  retrylab import otel-export.jsonl.gz spans.pb\n  temporal workflow show -w order-1042 --output json > order.json && retrylab import order.json\n  retrylab export --otlp - | retrylab --db other.db import -",
		Args: func(cmd *cobra.Command, args []string) error {
			if ff.searching() {
				return cobra.ArbitraryArgs(cmd, args)
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Getenv("GOMEMLIMIT") == "" {
				// The import streams, but Go's collector lets the heap grow
				// to twice what is live before it runs: this keeps a
				// million-span file under 150 MB (BENCHMARKS.md, 8b).
				debug.SetMemoryLimit(otlp.ImportMemoryLimit)
			}
			a.in = cmd.InOrStdin()
			return a.importFiles(cmd, args, &ff)
		},
	}
	ff.add(cmd)
	return cmd
}

// traces opens the database's traces for import, audit and export: through
// the retrylab that holds the database (the explorer, serve, a run),
// attached to it and holding it open as service does, so the host runs the
// work on its own store; or else on the file, opened by this process alone
// (no world, no workers). Either way the output is the same.
func (a *app) traces() (engine.Traces, error) { return a.openTraces(false) }

// readTraces is traces for a command that only reads (audit, export): with
// no retrylab to read through, the file is opened read-only, and a missing
// one is not created.
func (a *app) readTraces() (engine.Traces, error) {
	if err := a.needDB(); err != nil {
		return nil, err
	}
	return a.openTraces(true)
}

// openTraces is traces, read-only when readOnly.
func (a *app) openTraces(readOnly bool) (engine.Traces, error) {
	for try := 0; ; try++ {
		c, err := control.Dial(a.dbPath)
		if err == nil {
			if err = c.Hold(); err == nil {
				return c, nil
			}
			c.Close()
			if try < 40 {
				time.Sleep(25 * time.Millisecond) // until it has let go of the file
				continue
			}
			return nil, err
		}
		db, err := store.Open(a.dbPath, store.Options{ReadOnly: readOnly})
		if errors.Is(err, store.ErrLocked) {
			// A host may have come up while we waited for the lock.
			if c, derr := control.Dial(a.dbPath); derr == nil {
				if derr = c.Hold(); derr == nil {
					return c, nil
				}
				c.Close()
			}
			return nil, fmt.Errorf("%w, and no retrylab announces itself there to work through: wait for the program that has it open (a 'retrylab gen', say) to finish", err)
		}
		if err != nil {
			return nil, err
		}
		return engine.LocalTraces(db, a.imports), nil
	}
}

func (a *app) importFiles(cmd *cobra.Command, paths []string, ff *fetchFlags) error {
	if err := ff.checkUnused(cmd); err != nil {
		return err
	}
	c, err := ff.client()
	if err != nil {
		return err
	}
	if ff.searching() {
		if _, err := ff.searcher(c); err != nil {
			return err // refused before the database is opened
		}
	}
	for _, p := range paths {
		if fetch.IsURL(p) {
			if _, err := fetch.CheckURL(p); err != nil {
				return err
			}
		}
	}
	existed := fileExists(a.dbPath)
	t, err := a.traces()
	if err != nil {
		return err
	}
	imported, failed, err := a.importAll(t, c, paths, ff)
	t.Close()
	if _, hosted := t.(*control.Client); !existed && !hosted && imported == 0 {
		// Nothing was stored: leave no empty database behind.
		_ = os.Remove(a.dbPath)
	}
	switch {
	case err != nil:
		return err
	case failed > 0:
		return &exitError{code: 1, msg: ""}
	}
	return nil
}

// importAll imports what a search finds, then each of paths (files and
// URLs), and says how many were imported and how many failed, each
// failure said on its own line. Ctrl-C (or SIGTERM) ends it with
// errInterrupted and no line: a fetch or search at once, a file's import
// as the signal's default would (the process killed, nothing of the file
// stored).
func (a *app) importAll(t engine.Traces, c fetch.Client, paths []string, ff *fetchFlags) (imported, failed int, err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var fetching atomic.Bool // a fetch, which ends at ctx's end, is under way
	fetching.Store(true)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			if !fetching.Load() {
				stop() // the signal's default again: end as an interrupted import always did
				if p, err := os.FindProcess(os.Getpid()); err == nil {
					_ = p.Signal(os.Interrupt)
				}
			}
		case <-done:
		}
	}()
	if ff.searching() {
		if imported, failed, err = a.importSearch(ctx, t, c, ff); err != nil {
			return imported, failed, err
		}
	}
	for _, p := range paths {
		if ctx.Err() != nil {
			return imported, failed, errInterrupted
		}
		if fetch.IsURL(p) {
			var name string
			var res engine.ImportResult
			name, res, err = a.importURL(ctx, t, c, p)
			if ctx.Err() != nil {
				return imported, failed, errInterrupted
			}
			if err == nil {
				a.printImported(name, res)
			}
		} else {
			fetching.Store(false)
			if ctx.Err() != nil {
				return imported, failed, errInterrupted
			}
			err = a.importOne(t, p)
			fetching.Store(true)
		}
		if err != nil {
			failed++
			fmt.Fprintf(a.errOut, "retrylab: import %s\n", oneLine(err.Error()))
			continue
		}
		imported++
	}
	return imported, failed, nil
}

// fileExists reports whether something is at path.
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// fileError says err, the file p's that could not be opened, as the other
// import errors do, the file first: "x.json: no such file or directory",
// not "open x.json: …".
func fileError(p string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == p {
		return fmt.Errorf("%s: %w", p, pe.Err)
	}
	return err
}

// importOne imports one file and says what it did. Standard input ("-")
// or a pipe or device can be read once: what it is, is told from its first
// bytes as they arrive, not from a first read of the file.
func (a *app) importOne(t engine.Traces, p string) error {
	name := p
	var res engine.ImportResult
	var err error
	switch {
	case p == "-":
		name = "standard input"
		res, err = t.ImportStream(name, a.in)
	case special(p):
		f, oerr := os.Open(p)
		if oerr != nil {
			return fileError(p, oerr)
		}
		defer f.Close()
		res, err = t.ImportStream(name, f)
	case store.IsDatabaseFile(p):
		return fmt.Errorf("%s is a retrylab database, not a trace file: open it with --db %s, or move its executions with 'retrylab --db %s export --otlp - | retrylab import -'", p, p, p)
	case isDir(p):
		// Read as a file, a directory is empty ("no spans"): say what it is.
		return fmt.Errorf("%s is a directory; name the files in it: retrylab import %s", p, filepath.Join(p, "*"))
	default:
		src, known, serr := a.imports.SniffFile(p)
		if serr != nil {
			return fileError(p, serr)
		}
		if !known {
			return fmt.Errorf("%s: not a trace of any format this retrylab reads", p)
		}
		res, err = t.ImportFile(p, engine.ImportFormat(src.Format()))
	}
	if err != nil {
		return err
	}
	a.printImported(name, res)
	return nil
}

// printImported says what importing one file did, as its source words it.
func (a *app) printImported(p string, res engine.ImportResult) {
	fmt.Fprintf(a.out, "%s: %s", p, res.Summary)
	const shown = 5
	for i, x := range res.Executions {
		if i == shown {
			fmt.Fprintf(a.out, " and %d more", len(res.Executions)-shown)
			break
		}
		sep := " -> "
		if i > 0 {
			sep = ", "
		}
		fmt.Fprint(a.out, sep+x)
	}
	fmt.Fprintln(a.out)
}

// isDir reports whether path (followed through symbolic links) names a
// directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
