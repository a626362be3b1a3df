package engine

import (
	"io"
	"sync"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/notice"
)

// HostTraces imports, audits and exports the traces of a running host's
// database for another process (engine/control serves it): the code
// LocalTraces runs, on the host's store, with the host's locks, so that a
// reset waits for none of them to be cut short. The host hands it out
// (Host.Traces); it holds no state of its own.
type HostTraces struct{ h *Host }

// Traces is the host's traces, for a process attached to it.
func (h *Host) Traces() HostTraces { return HostTraces{h} }

// Knows reports whether the host imports format (one of its registry's
// sources).
func (t HostTraces) Knows(format ImportFormat) bool {
	_, ok := t.h.cfg.Imports.Lookup(string(format))
	return ok
}

// ImportStream imports what r holds into the host's database, as
// LocalTraces does (format empty: told from its first bytes), one import
// at a time, and tells subscribers (a running explorer) of the executions
// it created or extended.
func (t HostTraces) ImportStream(name string, format ImportFormat, r io.Reader) (ImportResult, error) {
	return t.ImportStreamCommitted(name, format, r, nil)
}

// ImportStreamCommitted is ImportStream; committed, if set, is called once
// the import is committed, before its executions are announced (a notice
// of its own goes ahead of theirs, which may be thousands).
func (t HostTraces) ImportStreamCommitted(name string, format ImportFormat, r io.Reader, committed func(ImportResult)) (ImportResult, error) {
	// An import starts by cleaning up what unfinished imports left
	// (otlp.CleanPending): two at once would take each other for one.
	t.h.importMu.Lock()
	defer t.h.importMu.Unlock()
	res, err := t.h.stored().importStream(name, format, r)
	if err == nil {
		if committed != nil {
			committed(res)
		}
		for _, x := range res.Executions {
			t.h.Announce(x)
		}
	}
	return res, err
}

// Audit audits the host's executions, as LocalTraces does; a reset waits
// for it (it reads execution after execution, as an export does).
func (t HostTraces) Audit(ids []string, opts audit.Options) (audit.Report, error) {
	t.h.exporting.RLock()
	defer t.h.exporting.RUnlock()
	return t.h.stored().audit(ids, opts)
}

// PlanOTLPExport plans an export of the host's executions, as LocalTraces
// does. A reset waits until the export is written or closed.
func (t HostTraces) PlanOTLPExport(ids []string, o OTLPExportOptions) (OTLPExport, error) {
	t.h.exporting.RLock()
	e, err := t.h.stored().planOTLPExport(ids, o)
	if err != nil {
		t.h.exporting.RUnlock()
		return nil, err
	}
	return &heldExport{OTLPExport: e, release: sync.OnceFunc(t.h.exporting.RUnlock)}, nil
}

// heldExport is an export that keeps a reset waiting until it is written
// or closed.
type heldExport struct {
	OTLPExport
	release func()
}

func (e *heldExport) Write(w io.Writer) (int, error) {
	defer e.release()
	return e.OTLPExport.Write(w)
}

func (e *heldExport) Close() error {
	defer e.release()
	return e.OTLPExport.Close()
}

// Tell says msg to whoever watches the host (a notice with Host set): what
// the traces endpoints did that no command is there to say, such as an
// import committed after its client went away.
func (t HostTraces) Tell(msg string) { t.h.bus.publish(notice.Notice{Host: msg}) }
