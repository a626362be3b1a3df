package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/store"
)

// BucketMirror is the mirror's cursor in the participant's database:
// participant id, NUL, execution id -> cursor (what the room acknowledged
// of that execution); participant id, NUL, NUL, "predictions" -> the
// acknowledged Predictions. This package owns it.
const BucketMirror store.Bucket = "room_mirror"

// Source is what the mirror reads of the participant's host (*engine.Host
// is one): its executions, their events, the notices that say something
// was recorded, and its database for the cursor and the lesson progress.
type Source interface {
	Store() *store.DB
	Now() time.Time
	Subscribe(buffer int) (<-chan notice.Notice, func())
	Executions(skip, limit int) ([]history.Execution, int, error)
	Execution(id string) (history.Execution, error)
	Events(id string, from uint64, limit int) ([]history.Event, error)
}

// MirrorOptions tunes a mirror; the zero value is the workshop's.
type MirrorOptions struct {
	// Client is the HTTP client for the room; default: 5s timeout.
	Client *http.Client
	// Retry is the first wait after a failed push, doubled up to
	// MaxRetry. Defaults: 200ms, 5s.
	Retry, MaxRetry time.Duration
	// Rescan is how often the mirror looks for what no notice announces
	// (the lesson predictions). Default: 10s. Every execution is looked at
	// when the mirror starts, after a lag of its notices, and after a
	// failed push.
	Rescan time.Duration
	// Drain bounds what Close, and a Flush before a reset, wait for the
	// last pushes. Default: 2s.
	Drain time.Duration
	// Coalesce is how long the mirror gathers what a run records before
	// it pushes it: the events of one burst go in one push. Default:
	// 100ms.
	Coalesce time.Duration
	// Namespace, when set, prefixes the ids of the executions mirrored
	// ("lesson" gives "lesson:exec_7K2Q"): a participant's lessons run in
	// a database of their own, under the same ids as its own runs.
	Namespace string
	// Warn, when set, is told in one line, when the mirror closes, that
	// the room could not be reached or refused this database's token the
	// last time it tried (Unreachable words it): what ran here is not in
	// the room yet. Nothing is said while the room is fine.
	Warn func(problem string)
}

// batchEvents is how many events one push carries at most.
const batchEvents = 500

// Mirror pushes a participant's executions, their events and its lesson
// predictions to the room it joined, as the host records them.
type Mirror struct {
	src    Source
	m      Membership
	client Client
	opts   MirrorOptions

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	warnOnce sync.Once
	// passing holds a token while a pass runs: one at a time, the
	// mirror's own and a Flush's from the host's goroutine before a reset.
	passing chan struct{}
	// failed is the last pass's error, nil after one that went through;
	// guarded by passing.
	failed error
}

// Companion is the engine.Config.Companion that mirrors a host's database
// to the room remembered in file (MembershipFile beside the participant's
// database), tuned by opts: none when no room is remembered (or the file
// cannot be read: the participant keeps working locally).
func Companion(file string, opts MirrorOptions) func(*engine.Host) engine.CompanionHooks {
	return func(h *engine.Host) engine.CompanionHooks {
		m, ok, err := LoadMembership(file)
		if err != nil || !ok {
			return engine.CompanionHooks{}
		}
		mi := StartMirror(h, m, opts)
		// A reset (each lesson starts with one) would take the runs
		// before the room had all of them: they are sent first.
		return engine.CompanionHooks{Stop: mi.Close, BeforeReset: mi.Flush}
	}
}

// StartMirror starts mirroring src to the room m names.
func StartMirror(src Source, m Membership, opts MirrorOptions) *Mirror {
	if opts.Retry <= 0 {
		opts.Retry = 200 * time.Millisecond
	}
	if opts.MaxRetry <= 0 {
		opts.MaxRetry = 5 * time.Second
	}
	if opts.Rescan <= 0 {
		opts.Rescan = 10 * time.Second
	}
	if opts.Drain <= 0 {
		opts.Drain = 2 * time.Second
	}
	if opts.Coalesce <= 0 {
		opts.Coalesce = 100 * time.Millisecond
	}
	mi := &Mirror{src: src, m: m, opts: opts, client: Client{URL: m.URL, Token: m.Token, HTTP: opts.Client},
		stop: make(chan struct{}), done: make(chan struct{}), passing: make(chan struct{}, 1)}
	notices, unsubscribe := src.Subscribe(256)
	go mi.run(notices, unsubscribe)
	return mi
}

// Flush sends what the room has not acknowledged yet, now, and returns
// when the room acknowledged it, or it could not be sent within
// MirrorOptions.Drain (the room down or slow: it is sent later, as any
// push that failed). The host calls it before a reset, which would wipe
// what was not sent. After Close it does nothing.
func (mi *Mirror) Flush() {
	select {
	case <-mi.done:
		return
	default:
	}
	mi.drain()
}

// Close stops the mirror after a last push of what is left, bounded by
// MirrorOptions.Drain: what the room did not acknowledge stays for the
// next time the database is open.
func (mi *Mirror) Close() {
	mi.stopOnce.Do(func() { close(mi.stop) })
	<-mi.done
	mi.passing <- struct{}{} // a Flush under way is done
	failed := mi.failed
	<-mi.passing
	if failed != nil && mi.opts.Warn != nil {
		mi.warnOnce.Do(func() { mi.opts.Warn(Unreachable(mi.m.URL, failed)) })
	}
}

// Unreachable words, in one line, why the room at url did not take a
// push: down or unreachable, a refused token, or what the room said.
func Unreachable(url string, err error) string {
	var se *StatusError
	var ne net.Error
	switch {
	case errors.Is(err, ErrRefused):
		return fmt.Sprintf("the room at %s refused this database's token: join it again (retrylab join %s --code CODE --name NAME)", url, url)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("the room at %s cannot be reached (connection refused): these runs are kept here and sent when it is back", url)
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("the room at %s did not answer in time: these runs are kept here and sent when it answers", url)
	case errors.As(err, &se):
		return fmt.Sprintf("the room at %s did not take these runs (%s): they are kept here", url, se.Error())
	default:
		return fmt.Sprintf("the room at %s cannot be reached: these runs are kept here and sent when it is back", url)
	}
}

func (mi *Mirror) run(notices <-chan notice.Notice, unsubscribe func()) {
	defer close(mi.done)
	defer unsubscribe()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-mi.stop:
		case <-mi.done:
		}
		cancel()
	}()
	all := true // look at every execution: at start, after a lag or an error
	dirty := map[string]bool{}
	wait := mi.opts.Retry
	rescan := time.NewTicker(mi.opts.Rescan)
	defer rescan.Stop()
	for {
		mi.passing <- struct{}{}
		err := mi.pass(ctx, all, dirty)
		if ctx.Err() == nil { // a pass cut short by Close says nothing of the room
			mi.failed = err
		}
		<-mi.passing
		if err == nil {
			all, wait = false, mi.opts.Retry
			clear(dirty)
		} else {
			all = true // whatever was dirty is found again by the scan
			select {
			case <-mi.stop:
				mi.drain()
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, mi.opts.MaxRetry)
			continue
		}
		select {
		case <-mi.stop:
			mi.drain()
			return
		case <-rescan.C:
			// The lesson progress says nothing on the bus: look at it.
		case n, ok := <-notices:
			if !ok {
				mi.drain()
				return
			}
			mi.note(n, &all, dirty)
			// A run records in bursts: what else comes within the
			// window goes in the same push (a room under a workshop's
			// load commits one push for many events, not one each).
			window := time.NewTimer(mi.opts.Coalesce)
			for gathering := true; gathering; {
				select {
				case n, ok := <-notices:
					if !ok {
						window.Stop()
						mi.drain()
						return
					}
					mi.note(n, &all, dirty)
				case <-window.C:
					gathering = false
				case <-mi.stop:
					window.Stop()
					mi.drain()
					return
				}
			}
		}
	}
}

func (mi *Mirror) note(n notice.Notice, all *bool, dirty map[string]bool) {
	switch {
	case n.Lagged:
		*all = true
	case n.Event != nil && n.Execution != "":
		dirty[n.Execution] = true
	}
}

// drain pushes what is left, for at most the drain bound (the wait for
// another pass under way included).
func (mi *Mirror) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), mi.opts.Drain)
	defer cancel()
	select {
	case mi.passing <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-mi.passing }()
	mi.failed = mi.pass(ctx, true, nil)
}

// cursor is what the room acknowledged of one execution: its events up
// to Seq and its record as Record.
type cursor struct {
	Seq    uint64    `json:"seq"`
	Record Execution `json:"record"`
}

func (mi *Mirror) cursorKey(exec string) []byte {
	return []byte(mi.m.Participant + "\x00" + exec)
}

func (mi *Mirror) predictionsKey() []byte {
	return []byte(mi.m.Participant + "\x00\x00predictions")
}

// pass pushes what the room has not acknowledged: of every execution when
// all is set, else of the dirty ones; and the predictions.
func (mi *Mirror) pass(ctx context.Context, all bool, dirty map[string]bool) error {
	var xs []history.Execution
	if all {
		var err error
		if xs, _, err = mi.src.Executions(0, 0); err != nil {
			return fmt.Errorf("mirror: list executions: %w", err)
		}
	} else {
		for id := range maps.Keys(dirty) {
			x, err := mi.src.Execution(id)
			if err != nil {
				continue // gone (a reset): nothing to push
			}
			xs = append(xs, x)
		}
	}
	for _, x := range xs {
		if x.Imported != "" {
			continue // not a run of this participant's
		}
		if err := mi.pushExecution(ctx, x); err != nil {
			return err
		}
	}
	return mi.pushPredictions(ctx)
}

// pushExecution pushes one execution's record and the events the room has
// not acknowledged, a batch at a time, advancing the cursor after each
// acknowledgement.
func (mi *Mirror) pushExecution(ctx context.Context, x history.Execution) error {
	var cur cursor
	err := mi.src.Store().View(func(tx *store.Tx) error {
		if data := tx.Get(BucketMirror, mi.cursorKey(x.ID)); data != nil {
			return json.Unmarshal(data, &cur)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mirror: read cursor of %s: %w", x.ID, err)
	}
	rec := Execution{ID: x.ID, Scenario: x.Scenario, Status: string(x.Status), Runs: x.Runs, Sends: x.Sends,
		Duplicates: x.Duplicates, Started: x.Started, Updated: x.Updated}
	if mi.opts.Namespace != "" {
		rec.ID = mi.opts.Namespace + ":" + x.ID
	}
	for {
		evs, err := mi.src.Events(x.ID, cur.Seq+1, batchEvents)
		if err != nil {
			return fmt.Errorf("mirror: read events of %s: %w", x.ID, err)
		}
		if len(evs) == 0 && sameRecord(cur.Record, rec) {
			return nil
		}
		req := PushRequest{Execution: &rec, Events: make([]json.RawMessage, 0, len(evs))}
		next := cur
		for _, ev := range evs {
			data, err := json.Marshal(ev)
			if err != nil {
				return fmt.Errorf("mirror: encode event %d of %s: %w", ev.Seq, x.ID, err)
			}
			req.Events = append(req.Events, data)
			next.Seq = ev.Seq
		}
		next.Record = rec
		if _, err := mi.client.Push(ctx, req); err != nil {
			return fmt.Errorf("mirror: push %s: %w", x.ID, err)
		}
		data, err := json.Marshal(next)
		if err != nil {
			return err
		}
		if err := mi.src.Store().Update(func(tx *store.Tx) error { return tx.Put(BucketMirror, mi.cursorKey(x.ID), data) }); err != nil {
			return fmt.Errorf("mirror: save cursor of %s: %w", x.ID, err)
		}
		cur = next
		if len(evs) < batchEvents {
			return nil
		}
	}
}

func sameRecord(a, b Execution) bool {
	return a.ID == b.ID && a.Scenario == b.Scenario && a.Status == b.Status && a.Runs == b.Runs &&
		a.Duplicates == b.Duplicates && a.Started.Equal(b.Started) && a.Updated.Equal(b.Updated) && maps.Equal(a.Sends, b.Sends)
}

// predictionsCursor is what the room acknowledged of the lesson
// progress: the totals and the answers, lesson by lesson. (A cursor saved
// before the answers were mirrored has none: they are sent once.)
type predictionsCursor struct {
	Predictions
	Answers []Answer `json:"answers,omitempty"`
}

// pushPredictions pushes the lesson predictions, totals and answers, when
// the database holds lesson progress (the lessons' own database does)
// that the room has not acknowledged.
func (mi *Mirror) pushPredictions(ctx context.Context) error {
	st, err := lesson.LoadProgress(mi.src)
	if err != nil || len(st.Done) == 0 {
		return nil // no lessons here; a damaged progress is the lesson's to report
	}
	p := predictionsCursor{Predictions: Predictions{Asked: len(st.Done)}, Answers: make([]Answer, 0, len(st.Done))}
	for _, a := range st.Done {
		if a.Correct {
			p.Right++
		}
		p.Answers = append(p.Answers, Answer{Lesson: a.Scenario, Predicted: max(a.Predicted, -1), Actual: a.Actual, Correct: a.Correct})
	}
	var acked predictionsCursor
	var have bool
	err = mi.src.Store().View(func(tx *store.Tx) error {
		if data := tx.Get(BucketMirror, mi.predictionsKey()); data != nil {
			have = true
			return json.Unmarshal(data, &acked)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mirror: read predictions cursor: %w", err)
	}
	if have && acked.Predictions == p.Predictions && slices.Equal(acked.Answers, p.Answers) {
		return nil
	}
	if _, err := mi.client.Push(ctx, PushRequest{Predictions: &p.Predictions, Answers: p.Answers}); err != nil {
		return fmt.Errorf("mirror: push predictions: %w", err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("mirror: save predictions cursor: %w", err)
	}
	return mi.src.Store().Update(func(tx *store.Tx) error { return tx.Put(BucketMirror, mi.predictionsKey(), data) })
}
