package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/store"
)

func (a *app) importCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE...",
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
on the timeline. Refused, naming the event: a history that does not start at
event 1 or has holes (cut short), events out of order, an event type this
version does not know (a newer server). A running workflow's history is
imported as running; importing a later download of it adds the new events.

FILE - is standard input; it and a pipe (/dev/stdin, <(...)) are read once,
as they come: retrylab export --otlp - | retrylab --db other.db import -

Exit status: 0 when every file was imported, 1 when any failed.`,
		Example: "  retrylab import traces.json\n  retrylab import otel-export.jsonl.gz spans.pb\n  temporal workflow show -w order-1042 --output json > order.json && retrylab import order.json\n  retrylab export --otlp - | retrylab --db other.db import -",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Getenv("GOMEMLIMIT") == "" {
				// The import streams, but Go's collector lets the heap grow
				// to twice what is live before it runs: this keeps a
				// million-span file under 150 MB (BENCHMARKS.md, 8b).
				debug.SetMemoryLimit(otlp.ImportMemoryLimit)
			}
			a.in = cmd.InOrStdin()
			return a.importFiles(args)
		},
	}
}

// openStore opens the database for a command that works on the store
// alone (no world, no workers).
func (a *app) openStore(readOnly bool) (*store.DB, error) {
	db, err := store.Open(a.dbPath, store.Options{ReadOnly: readOnly})
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%w; stop the explorer or 'retrylab serve' on %s first", err, a.dbPath)
	}
	return db, err
}

func (a *app) importFiles(paths []string) error {
	db, err := a.openStore(false)
	if err != nil {
		return err
	}
	defer db.Close()
	failed := 0
	for _, p := range paths {
		if p == "-" || special(p) {
			// Standard input or a pipe can be read once: what it is, is
			// told from what its buffer holds, not from a first read.
			if err := a.importStream(db, p); err != nil {
				failed++
				fmt.Fprintf(a.errOut, "retrylab: import %s\n", oneLine(err.Error()))
			}
			continue
		}
		if ok, err := temporal.SniffFile(p); err == nil && ok {
			if err := a.importTemporal(db, p); err != nil {
				failed++
				fmt.Fprintf(a.errOut, "retrylab: import %s\n", oneLine(err.Error()))
			}
			continue
		}
		res, err := otlp.ImportFile(db, p)
		if err != nil {
			failed++
			fmt.Fprintf(a.errOut, "retrylab: import %s\n", oneLine(err.Error()))
			continue
		}
		a.printImported(p, res)
	}
	if failed > 0 {
		return &exitError{code: 1, msg: ""}
	}
	return nil
}

// importStream imports standard input ("-") or the pipe or device at p,
// reading it once.
func (a *app) importStream(db *store.DB, p string) error {
	name, src := p, a.in
	if p == "-" {
		name = "standard input"
	} else {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		src = f
	}
	br := bufio.NewReaderSize(src, 1<<20)
	if temporal.SniffReader(br) {
		res, err := temporal.ImportReader(db, name, br)
		if err != nil {
			return err
		}
		a.printTemporal(name, res)
		return nil
	}
	res, err := otlp.ImportReader(db, name, br)
	if err != nil {
		return err
	}
	a.printImported(name, res)
	return nil
}

// printImported says what importing one OTLP file did.
func (a *app) printImported(p string, res otlp.FileResult) {
	fmt.Fprintf(a.out, "%s: %s, %d spans imported", p, res.Format, res.Spans)
	if res.Repeated > 0 {
		fmt.Fprintf(a.out, ", %d already there", res.Repeated)
	}
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
