package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/trace"
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
into the same model. Imported executions are not exported again.

The file is written whole or not at all (a temporary file renamed into place).`,
		Example: "  retrylab export --otlp traces.json\n  retrylab export --otlp naive.json exec_7K2Q",
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return &exitError{code: 2, msg: "export needs --otlp FILE (see --help)"}
			}
			return a.exportOTLP(file, args)
		},
	}
	cmd.Flags().StringVar(&file, "otlp", "", "write OTLP/JSON to this file")
	return cmd
}

func (a *app) exportOTLP(file string, ids []string) error {
	if err := checkDestination(file); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	named := len(ids) > 0
	db, err := a.openStore(false)
	if err != nil {
		return err
	}
	var traces []*trace.Trace
	err = func() error {
		defer db.Close()
		if !named {
			var err error
			ids, err = executionIDs(db, func(_ *store.Tx, _ string, rec []byte) bool {
				x, err := history.DecodeExecution(rec)
				return err == nil && x.Imported == ""
			})
			if err != nil {
				return err
			}
		}
		for _, id := range ids {
			t, err := foldOne(db, id)
			if err != nil {
				return err
			}
			if t.Events == 0 {
				return fmt.Errorf("export: %s was imported, not run by retrylab: its source file is its export", id)
			}
			traces = append(traces, t)
		}
		return nil
	}()
	if err != nil {
		return err
	}
	td := otlp.Export(traces, buildVersion())
	data, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return fmt.Errorf("export: encode: %w", err)
	}
	if err := writeFileAtomic(file, append(data, '\n')); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(a.out, "wrote %d executions, %d spans to %s (OTLP/JSON)\n", len(traces), td.SpanCount(), file)
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
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory; name a file in it, e.g. %s", path, filepath.Join(path, "traces.json"))
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory %s does not exist (create it first: mkdir -p %s)", dir, dir)
	}
	return nil
}

// writeFileAtomic writes data to a temporary file beside path, syncs it and
// renames it into place, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
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
