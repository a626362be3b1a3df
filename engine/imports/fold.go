package imports

import (
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
)

// Reader is what folding an execution by id reads: its record, and either
// retrylab's own history or, for an imported execution, its events as
// its source translates them. engine.Source provides it (a host, or a
// client attached to one), and the engine does on a store.
type Reader interface {
	Execution(id string) (history.Execution, error)
	Events(id string, from uint64, limit int) ([]history.Event, error)
	ImportedEvents(id string) ([]trace.Event, error)
}

// Streamer is a Reader that can hand over a history an event at a time,
// so that a fold of all of it holds none of it.
type Streamer interface {
	EachEvent(id string, fn func(history.Event)) error
}

// Fold folds execution id as r holds it, whatever its source: the one way
// every reader (show, audit, diff, lessons, the explorer, a resumed run)
// turns an execution into a trace. limit bounds how many events of
// retrylab's own history are read (0: all).
func Fold(r Reader, id string, limit int) (*trace.Trace, error) {
	x, err := r.Execution(id)
	if err != nil {
		return nil, err
	}
	return FoldExecution(r, x, limit)
}

// FoldExecution is Fold of an execution whose record is in hand.
func FoldExecution(r Reader, x history.Execution, limit int) (*trace.Trace, error) {
	if x.Imported != "" {
		events, err := r.ImportedEvents(x.ID)
		if err != nil {
			return nil, err
		}
		return trace.Fold(x.ID, events), nil
	}
	if s, ok := r.(Streamer); ok && limit == 0 {
		t := trace.New(x.ID)
		if err := s.EachEvent(x.ID, func(ev history.Event) { history.Apply(t, ev) }); err != nil {
			return nil, err
		}
		return t, nil
	}
	events, err := r.Events(x.ID, 0, limit)
	if err != nil {
		return nil, err
	}
	return history.Fold(x.ID, events), nil
}
