package room

// A participant's runs as the room holds them, read as any database's
// executions are (engine.Reader): the teacher's explorer shows one
// participant's trace beside its outbox through it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/attrib"
	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// ErrNoParticipant is a name no participant of the room has.
var ErrNoParticipant = errors.New("room: no participant by that name")

// Participant is a read-only engine.Reader over one participant's mirrored
// executions: their records, their events as the participant recorded them,
// and their outbox as those events observed it (the mail each attempt
// caused). The CRM is not mirrored: Records is empty. The room's own agent
// mail of the participant is not an execution's, so it is not listed.
//
// It is a *ParticipantReader.
func (s *Server) Participant(name string) (engine.Reader, error) {
	var id string
	err := s.cfg.Host.Store().View(func(tx *store.Tx) error {
		ps, err := participants(tx)
		for _, p := range ps {
			if p.Name == name {
				id = p.ID
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the room: %w", err)
	}
	if id == "" {
		return nil, fmt.Errorf("%w: %q", ErrNoParticipant, name)
	}
	return &ParticipantReader{db: s.cfg.Host.Store(), id: id, name: name}, nil
}

// ParticipantReader is one participant's runs in the room (Server.Participant).
type ParticipantReader struct {
	db       *store.DB
	id, name string
	// poll overrides ParticipantPoll (tests).
	poll time.Duration
}

var _ engine.Reader = (*ParticipantReader)(nil)

// Name is the participant's name.
func (p *ParticipantReader) Name() string { return p.name }

// record is a room execution as history knows executions.
func (e Execution) record() history.Execution {
	return history.Execution{ID: e.ID, Scenario: e.Scenario, Status: history.Status(e.Status), Runs: e.Runs,
		Sends: e.Sends, Duplicates: e.Duplicates, Started: e.Started, Updated: e.Updated}
}

// all is the participant's executions, the latest active first, as the
// explorer lists a host's.
func (p *ParticipantReader) all() ([]history.Execution, error) {
	var xs []Execution
	err := p.db.View(func(tx *store.Tx) (err error) {
		xs, err = executionsOf(tx, p.id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s's executions in the room: %w", p.name, err)
	}
	out := make([]history.Execution, len(xs))
	for i, x := range xs {
		out[i] = x.record()
	}
	byLastActivity(out)
	return out, nil
}

// byLastActivity orders executions as the explorer lists a host's: the
// latest activity first (a resumed execution comes back to the top), then
// the latest started, then by id.
func byLastActivity(xs []history.Execution) {
	slices.SortStableFunc(xs, func(a, b history.Execution) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}

// page is list[skip:skip+limit], clamped.
func page(list []history.Execution, skip, limit int) []history.Execution {
	skip = min(max(skip, 0), len(list))
	end := len(list)
	if limit > 0 {
		end = min(end, skip+limit)
	}
	return list[skip:end]
}

// Execution is one of the participant's executions.
func (p *ParticipantReader) Execution(id string) (history.Execution, error) {
	var x Execution
	var found bool
	err := p.db.View(func(tx *store.Tx) error {
		data := tx.Get(BucketExecutions, execKey(p.id, id))
		if data == nil {
			return nil
		}
		found = true
		return json.Unmarshal(data, &x)
	})
	if err != nil {
		return history.Execution{}, fmt.Errorf("read %s's execution %s in the room: %w", p.name, id, err)
	}
	if !found {
		return history.Execution{}, fmt.Errorf("%s has no execution %s in the room: %w", p.name, id, engine.ErrNoExecution)
	}
	return x.record(), nil
}

// Executions is a page of the participant's executions, the latest active
// first, and how many there are.
func (p *ParticipantReader) Executions(skip, limit int) ([]history.Execution, int, error) {
	all, err := p.all()
	if err != nil {
		return nil, 0, err
	}
	return page(all, skip, limit), len(all), nil
}

// FindExecutions is Executions of those that answer the filter
// (execindex.Parse).
func (p *ParticipantReader) FindExecutions(query string, skip, limit int) ([]history.Execution, int, error) {
	all, err := p.all()
	if err != nil {
		return nil, 0, err
	}
	q := execindex.Parse(query)
	var hit []history.Execution
	for _, x := range all {
		if q.Match(x) {
			hit = append(hit, x)
		}
	}
	return page(hit, skip, limit), len(hit), nil
}

// Events is the execution's events from seq from on, at most limit (0: all).
func (p *ParticipantReader) Events(id string, from uint64, limit int) ([]history.Event, error) {
	var raw []json.RawMessage
	err := p.db.View(func(tx *store.Tx) (err error) {
		raw, err = eventsOf(tx, p.id, id, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s's events of %s in the room: %w", p.name, id, err)
	}
	var out []history.Event
	for _, r := range raw {
		var ev history.Event
		if err := json.Unmarshal(r, &ev); err != nil {
			return nil, fmt.Errorf("read %s's events of %s in the room: %w", p.name, id, err)
		}
		if ev.Seq < from {
			continue
		}
		out = append(out, ev)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// ImportedEvents: the room holds no imported traces.
func (p *ParticipantReader) ImportedEvents(id string) ([]trace.Event, error) {
	return nil, fmt.Errorf("%s's execution %s in the room is not an imported trace: %w", p.name, id, engine.ErrNoExecution)
}

// MessagesFor is the mail the execution's attempts caused, as its
// EffectObserved events observed it, in order.
func (p *ParticipantReader) MessagesFor(execution string) ([]world.Message, error) {
	evs, err := p.Events(execution, 0, 0)
	if err != nil {
		return nil, err
	}
	var out []world.Message
	for _, ev := range evs {
		if ev.Type != history.EffectObserved || ev.Effect == nil || ev.Effect.Service != "mail" {
			continue
		}
		out = append(out, world.Message{Seq: uint64(len(out) + 1), ID: ev.Effect.ID, To: ev.Effect.Target, Subject: ev.Effect.Summary, Time: ev.Time,
			Attribution: attrib.Attribution{Execution: execution, Step: ev.Step, Key: ev.Key, Attempt: ev.Attempt, Run: ev.Run}})
	}
	return out, nil
}

// RecentMessages is the last limit messages of all the participant's
// executions, oldest first, and how many there are.
func (p *ParticipantReader) RecentMessages(limit int) ([]world.Message, int, error) {
	all, err := p.all()
	if err != nil {
		return nil, 0, err
	}
	var msgs []world.Message
	for i := len(all) - 1; i >= 0; i-- { // oldest execution first
		m, err := p.MessagesFor(all[i].ID)
		if err != nil {
			return nil, 0, err
		}
		msgs = append(msgs, m...)
	}
	n := len(msgs)
	if limit > 0 && n > limit {
		msgs = msgs[n-limit:]
	}
	return msgs, n, nil
}

// Records: the CRM is not mirrored to the room.
func (p *ParticipantReader) Records() ([]world.Record, error) { return nil, nil }

// ParticipantPoll is how often a subscription to a participant's runs
// looks for what the room received since.
const ParticipantPoll = time.Second

// Subscribe follows the participant's runs as the room receives them: a
// Lagged notice (read everything again) whenever its executions changed
// since the last look, every ParticipantPoll. The feed closes on
// unsubscribe.
func (p *ParticipantReader) Subscribe(buffer int) (<-chan notice.Notice, func()) {
	ch := make(chan notice.Notice, max(buffer, 1))
	stop := make(chan struct{})
	go func() {
		defer close(ch)
		t := time.NewTicker(p.every())
		defer t.Stop()
		last, _ := p.fingerprint()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			now, err := p.fingerprint()
			if err != nil || now == last {
				continue
			}
			last = now
			select {
			case ch <- notice.Notice{Lagged: true}:
			case <-stop:
				return
			default: // one waiting already says the same
			}
		}
	}()
	// Unsubscribing does not wait (the explorer calls it in Update): the
	// feed closes once the look under way, if any, is done.
	var once sync.Once
	return ch, func() { once.Do(func() { close(stop) }) }
}

// every is the subscription's poll period.
func (p *ParticipantReader) every() time.Duration {
	if p.poll > 0 {
		return p.poll
	}
	return ParticipantPoll
}

// fingerprint changes whenever the participant's runs do: the records of
// its executions and how many events the room holds of them.
func (p *ParticipantReader) fingerprint() (string, error) {
	var xs []Execution
	events := 0
	prefix := []byte(p.id + "\x00")
	err := p.db.View(func(tx *store.Tx) (err error) {
		if xs, err = executionsOf(tx, p.id); err != nil {
			return err
		}
		return tx.Scan(BucketEvents, prefix, false, func(k, _ []byte) bool {
			if !bytes.HasPrefix(k, prefix) {
				return false
			}
			events++
			return true
		})
	})
	var latest time.Time
	for _, x := range xs {
		if x.Updated.After(latest) {
			latest = x.Updated
		}
	}
	return fmt.Sprintf("%d %d %d", len(xs), events, latest.UnixNano()), err
}
