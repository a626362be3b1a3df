package imports_test

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// prefixSource takes the streams that start with its format's name.
type prefixSource struct{ format string }

func (p prefixSource) Format() string { return p.format }

func (p prefixSource) Sniff(br *bufio.Reader) bool {
	head, _ := br.Peek(len(p.format))
	return string(head) == p.format
}

func (p prefixSource) ImportFile(*store.DB, string) (imports.Result, error) {
	return imports.Result{Format: p.format}, nil
}

func (p prefixSource) Import(*store.DB, string, io.Reader) (imports.Result, error) {
	return imports.Result{Format: p.format}, nil
}

func (p prefixSource) Events(*store.Tx, string) ([]trace.Event, error) { return nil, nil }

func (p prefixSource) Verdict(*store.Tx, string) (audit.Grade, error) { return "", nil }

func TestSniffAsksInRegistrationOrder(t *testing.T) {
	r := imports.New(prefixSource{"ab"}, prefixSource{"a"})
	for in, want := range map[string]string{"abc": "ab", "axe": "a"} {
		s, ok := r.Sniff(bufio.NewReader(strings.NewReader(in)))
		if !ok || s.Format() != want {
			t.Errorf("Sniff(%q) = %v %v, want %s", in, s, ok, want)
		}
	}
	if s, ok := r.Sniff(bufio.NewReader(strings.NewReader("zzz"))); ok {
		t.Errorf("Sniff(zzz) = %s, want none", s.Format())
	}
	if _, ok := r.Lookup("a"); !ok {
		t.Error("Lookup(a) found nothing")
	}
	if u, ref := r.Units("a"); u != "events" || ref != "" {
		t.Errorf("Units of a source that counts nothing: %q %q", u, ref)
	}
	if _, err := r.Exporter("a"); err == nil {
		t.Error("a source that does not export gave an exporter")
	}
}

func TestRegisterRefusesTwoSourcesOfOneFormat(t *testing.T) {
	r := imports.New(prefixSource{"x"})
	defer func() {
		if recover() == nil {
			t.Error("a second source of format x was registered")
		}
	}()
	r.Register(prefixSource{"x"})
}

// reader is a Reader over fixed executions.
type reader struct {
	x        history.Execution
	history  []history.Event
	imported []trace.Event
	limits   []int
}

func (r *reader) Execution(id string) (history.Execution, error) {
	if id != r.x.ID {
		return history.Execution{}, errors.New("no such execution")
	}
	return r.x, nil
}

func (r *reader) Events(_ string, _ uint64, limit int) ([]history.Event, error) {
	r.limits = append(r.limits, limit)
	if limit > 0 && limit < len(r.history) {
		return r.history[:limit], nil
	}
	return r.history, nil
}

func (r *reader) ImportedEvents(string) ([]trace.Event, error) { return r.imported, nil }

func TestFoldReadsEachSourceItsWay(t *testing.T) {
	own := &reader{x: history.Execution{ID: "e1"}, history: []history.Event{
		{Seq: 1, Type: history.ExecutionStarted, Scenario: "naive"},
		{Seq: 2, Type: history.WorkerStarted, Run: 1},
		{Seq: 3, Type: history.ExecutionCompleted, Run: 1},
	}}
	tr, err := imports.Fold(own, "e1", 2)
	if err != nil || tr.Events != 2 || tr.LastSeq != 2 || len(own.limits) != 1 || own.limits[0] != 2 {
		t.Fatalf("fold of retrylab's own at most 2 events: %d events, last %d, limits %v, %v", tr.Events, tr.LastSeq, own.limits, err)
	}
	imp := &reader{x: history.Execution{ID: "e2", Imported: "fake"}, imported: []trace.Event{
		{Seq: 1, Kind: trace.ExecutionStarted, Scenario: "svc"},
	}}
	tr, err = imports.Fold(imp, "e2", 0)
	if err != nil || tr.Events != 1 || tr.Scenario != "svc" || len(imp.limits) != 0 {
		t.Fatalf("fold of an imported execution: %+v %v (history read %v)", tr, err, imp.limits)
	}
	if _, err := imports.Fold(imp, "nope", 0); err == nil {
		t.Error("fold of a missing execution gave no error")
	}
}
