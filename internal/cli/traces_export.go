package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/internal/plural"
	"github.com/retrylab/retrylab/store"
)

func (a *app) exportCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "export --otlp FILE [EXECUTION...]",
		Short: "Write retrylab's own executions as OpenTelemetry traces (OTLP/JSON)",
		Long: `Write retrylab's own executions (all, or those named) to FILE as one OTLP/JSON
document, for any trace viewer that reads OpenTelemetry. Spans follow the GenAI
semantic conventions: each run is a trace whose root span is "retrylab.run"
(the runs of one execution share gen_ai.conversation.id), each turn an
invoke_agent span, each attempt of a tool call an execute_tool span, each
journal replay a "retrylab.replay" span. What the conventions have no name for
is in retrylab.* attributes: retrylab.attempt, retrylab.faults,
retrylab.deduplicated, retrylab.outcome, retrylab.idempotency_key,
retrylab.effects and retrylab.provider.message_ids, retrylab.journal.recorded,
retrylab.replay, retrylab.run.crashed. 'retrylab import FILE' reads it back
into the same model. Imported executions are left out unless named (their
source file is their export); a named one is written from the model it was
imported into.

A FILE whose name ends in .jsonl gets OTLP/JSON Lines instead: the same spans
in batches of 512, each line a document of its own, as an OpenTelemetry SDK's
batch span processor sends them (and as collectors' file exporters write).

The file is written whole or not at all (a temporary file renamed into place);
a device or a named pipe (/dev/null, a FIFO) is written into as it is. A
retrylab database is refused as FILE: it would be replaced.
With --otlp - the document goes to standard output as it is written, and the
summary to standard error. Either way it streams: an execution's history is
read once, an event at a time, never held whole in memory, and each span is
written as soon as it is final, after the spans inside it (OTLP puts no order
on spans): attempts as they settle, a turn once the next begins, each run's
root span, which says how the run ended, last. While another retrylab holds
the database (the explorer, serve), that retrylab reads the executions and
streams the document here as it writes it: the same bytes.`,
		Example: "  retrylab export --otlp traces.json\n  retrylab export --otlp traces.jsonl\n  retrylab export --otlp naive.json exec_7K2Q",
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return &exitError{code: 2, msg: "export needs --otlp FILE (see --help)"}
			}
			return a.exportOTLP(file, args)
		},
	}
	cmd.Flags().StringVar(&file, "otlp", "", "write OTLP/JSON to this file (- for standard output; *.jsonl: JSON Lines)")
	return cmd
}

func (a *app) exportOTLP(file string, ids []string) error {
	toStdout := file == "-"
	if !toStdout {
		if err := checkDestination(file); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	t, err := a.readTraces()
	if err != nil {
		return err
	}
	defer t.Close()
	// Every execution named is found before anything is written.
	lines := !toStdout && strings.HasSuffix(strings.ToLower(file), ".jsonl")
	format := "OTLP/JSON"
	if lines {
		format = "OTLP/JSON Lines"
	}
	e, err := t.PlanOTLPExport(ids, engine.OTLPExportOptions{Version: buildVersion(), Lines: lines})
	if err != nil {
		return err
	}
	defer e.Close()
	spans := 0
	write := func(w io.Writer) error {
		n, err := e.Write(w)
		spans = n
		return err
	}
	if toStdout {
		bw := bufio.NewWriter(a.out)
		if err := write(bw); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(a.errOut, "wrote %s, %s to standard output (OTLP/JSON)\n", plural.Count(e.Executions(), "execution"), plural.Count(spans, "span"))
		return nil
	}
	if special(file) {
		// A device, a named pipe or a socket is written in place: the
		// temporary file renamed over it would replace /dev/null (as root)
		// or fail in /dev, and a pipe's reader would never see the data.
		if err := writeSpecial(file, write); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	} else if err := writeFileAtomic(file, write); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(a.out, "wrote %s, %s to %s (%s)\n", plural.Count(e.Executions(), "execution"), plural.Count(spans, "span"), file, format)
	return nil
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

// checkDestination says, before any work, why a file cannot be written at
// path in words about path (not the temporary file writeFileAtomic makes).
func checkDestination(path string) error {
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory; name a file in it, e.g. %s", path, filepath.Join(path, "traces.json"))
	}
	// A database named by mistake ('--otlp retrylab.db' for '--db') would
	// be replaced by the export, under the very host that holds it open.
	if err == nil && fi.Mode().IsRegular() && store.IsDatabaseFile(path) {
		return fmt.Errorf("%s is a retrylab database, which the export would replace; name a new file, e.g. %s", path, filepath.Join(filepath.Dir(path), "traces.json"))
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory %s does not exist (create it first: mkdir -p %s)", dir, dir)
	}
	return nil
}

// special reports whether path (followed through symbolic links, as
// /dev/stdout is one) names something that is not a regular file or a
// directory: a device, a named pipe, a socket.
func special(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.Mode().IsRegular() && !fi.IsDir()
}

// writeSpecial writes with write straight into the special file at path.
func writeSpecial(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	if err := write(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeFileAtomic writes a file with write into a temporary file beside
// path, syncs it and renames it into place, so a reader never sees half a
// file, and a failed write leaves nothing behind.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			// Say it of the file asked for, not of the temporary one.
			return fmt.Errorf("cannot write %s: no permission to create files in %s", path, filepath.Dir(path))
		}
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 256<<10)
	if err := write(w); err != nil {
		tmp.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
