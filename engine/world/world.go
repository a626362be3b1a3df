// Package world runs retrylab's simulated providers: a mail API that honours
// the Idempotency-Key header (draft-ietf-httpapi-idempotency-key-header-07,
// with Stripe's documented behaviour) and a small CRM whose writes range from
// naturally idempotent upserts to unsafe creates.
//
// Both are real HTTP servers on 127.0.0.1, so workers call them with real
// deadlines. Every effect is written to the bbolt store in the same
// transaction as the idempotency record that describes it, so a crash can
// never leave one without the other.
//
// The world attributes each effect to the request that caused it, read from
// the X-Retrylab-* headers, and carries out the server-side fault points:
// timeouts before and after the effect, server errors and slow responses.
// Its clock is an injected clock plus a persisted offset, so key retention
// can be taught by advancing time instead of waiting for it.
package world

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrylab/retrylab/engine/attrib"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/store"
)

// Request headers that attribute a request to the step that sent it
// (engine/attrib, the protocol between workers and the world). External
// clients omit them; their effects are unattributed.
const (
	HeaderExecution = attrib.HeaderExecution
	HeaderStep      = attrib.HeaderStep
	HeaderAttempt   = attrib.HeaderAttempt
	HeaderRun       = attrib.HeaderRun
)

// Idempotency headers.
const (
	// HeaderIdempotencyKey carries the caller's idempotency key.
	HeaderIdempotencyKey = attrib.HeaderIdempotencyKey
	// HeaderIdempotentReplayed is set to "true" on a replayed response.
	HeaderIdempotentReplayed = attrib.HeaderIdempotentReplayed
)

// Defaults for Config fields left zero, and the key length limit.
const (
	DefaultRetention           = 24 * time.Hour
	DefaultSlowDelay           = 50 * time.Millisecond
	DefaultMaxBody       int64 = 1 << 20
	MaxIdempotencyKeyLen       = 255
	// HoldBound caps how long a timeout fault withholds a response while
	// waiting for the client to give up.
	HoldBound = 2 * time.Minute
)

// Services named in Activity.Service.
const (
	ServiceMail = "mail"
	ServiceCRM  = "crm"
)

// Activity kinds.
const (
	KindDelivered = "delivered" // the mail API sent a message
	KindReplayed  = "replayed"  // a stored response was replayed; no effect
	KindConflict  = "conflict"  // 409: key in flight, or CRM id taken with other fields
	KindMismatch  = "mismatch"  // 422: key reused with another payload or endpoint
	KindRejected  = "rejected"  // other 4xx (validation, bad key, body too large, ...)
	KindCRMWrite  = "crm-write" // a CRM write was applied
	KindCRMRead   = "crm-read"  // a CRM read was served
	KindFault     = "fault"     // a server-side fault point was applied
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrStarted means Start was called twice.
	ErrStarted = errors.New("world already started")
	// ErrClosed means the world was closed.
	ErrClosed = errors.New("world is closed")
	// ErrConfig means New was given an unusable Config.
	ErrConfig = errors.New("invalid world config")
)

// Clock tells the time. The world clock is Clock.Now() plus a persisted offset.
type Clock interface{ Now() time.Time }

// FaultSource decides which server-side faults a request suffers.
type FaultSource interface {
	// ServerFaults returns the server-side fault points
	// (fault.Point.ServerSide()) to apply to a request attributed to
	// (execution, step, attempt). For unattributed requests execution is "".
	// It is called once per request, on arrival.
	ServerFaults(execution, step string, attempt int) []fault.Point
}

// Attribution names the request that caused an effect, as read from the
// X-Retrylab-* and Idempotency-Key request headers (attrib.Attribution).
// It is zero for external clients.
type Attribution = attrib.Attribution

// Activity is something the world did, reported for live views and
// narration.
type Activity struct {
	Kind        string      `json:"kind"`    // one of the Kind* constants
	Service     string      `json:"service"` // ServiceMail or ServiceCRM
	Time        time.Time   `json:"time"`    // world clock
	Attribution Attribution `json:"attribution"`
	MessageID   string      `json:"message_id,omitempty"`
	To          string      `json:"to,omitempty"`
	Subject     string      `json:"subject,omitempty"`
	Key         string      `json:"key,omitempty"`
	RecordID    string      `json:"record_id,omitempty"`
	Detail      string      `json:"detail,omitempty"`
	Status      int         `json:"status,omitempty"`
	// Recorded is the Seq of the history event that records this effect in
	// its execution's history (Config.Record), RecordedAt that event's time;
	// zero when nothing recorded it.
	Recorded   uint64    `json:"recorded,omitempty"`
	RecordedAt time.Time `json:"recorded_at,omitzero"`
}

// Effect reports whether the activity is an effect: a message delivered
// or a CRM row written.
func (a Activity) Effect() bool { return a.Kind == KindDelivered || a.Kind == KindCRMWrite }

// Config configures New.
type Config struct {
	// DB holds the world's state. Required.
	DB *store.DB
	// Clock is the base of the world clock. Required.
	Clock Clock
	// Faults supplies server-side faults. May be nil.
	Faults FaultSource
	// Observe receives every Activity after its transaction committed. May be
	// nil. It is called on the request's goroutine and must not block.
	Observe func(Activity)
	// Record is called for each effect inside the transaction that makes
	// it, so the effect and its record in the attributed execution's
	// history commit together. It may set a.Recorded and a.RecordedAt; an
	// error aborts the request. May be nil.
	Record func(tx *store.Tx, a *Activity) error
	// Retention is how long, by the world clock, a key is remembered.
	// Zero means DefaultRetention.
	Retention time.Duration
	// SlowDelay is the delay of fault.SlowResponse. Zero means DefaultSlowDelay.
	SlowDelay time.Duration
	// MaxBody caps request bodies. Zero means DefaultMaxBody.
	MaxBody int64
	// MailPort and CRMPort are the ports the services listen on, on
	// 127.0.0.1. Zero means any free port.
	MailPort, CRMPort int
	// ReadOnly makes a world that only reads DB (opened read-only): New
	// leaves the in-flight keys a previous process left where they are,
	// and the world is never started.
	ReadOnly bool
}

// World is the simulated outside world. Its methods are safe for concurrent use.
type World struct {
	db        *store.DB
	clock     Clock
	faults    FaultSource
	observe   func(Activity)
	record    func(*store.Tx, *Activity) error
	retention time.Duration
	slowDelay time.Duration
	maxBody   int64
	holdBound time.Duration
	// mailPort and crmPort are the ports to listen on; 0: any free one.
	mailPort, crmPort int

	// afterClaim, when set (by tests), runs after a request claimed its key
	// and before the effect.
	afterClaim func(key string)

	tokenNonce string
	tokenSeq   atomic.Uint64

	closing    chan struct{}
	closeOnce  sync.Once
	baseCtx    context.Context
	cancelBase context.CancelFunc

	advanceMu sync.Mutex // serialises Advance and Reset

	mu            sync.Mutex
	offset        time.Duration
	dedupeDefault bool
	dedupe        map[string]bool
	retentions    map[string]time.Duration
	started       bool
	closed        bool
	servers       []*http.Server
	mailURL       string
	crmURL        string
	serveErrs     []error
	serveWG       sync.WaitGroup
}

// keyClockOffset holds the world clock offset in the BucketMeta bucket.
const keyClockOffset = "clock_offset"

// New creates a world over cfg.DB. It loads the persisted clock offset and
// deletes in-flight key records left by a previous process: an effect and
// its completed key record commit together, so an in-flight record means the
// effect never happened and the key must not stay blocked.
func New(cfg Config) (*World, error) {
	if cfg.DB == nil {
		return nil, fmt.Errorf("new world: %w: DB is nil", ErrConfig)
	}
	if cfg.Clock == nil {
		return nil, fmt.Errorf("new world: %w: Clock is nil", ErrConfig)
	}
	if cfg.Retention < 0 || cfg.SlowDelay < 0 || cfg.MaxBody < 0 {
		return nil, fmt.Errorf("new world: %w: negative Retention, SlowDelay or MaxBody", ErrConfig)
	}
	w := &World{
		db:            cfg.DB,
		clock:         cfg.Clock,
		faults:        cfg.Faults,
		observe:       cfg.Observe,
		record:        cfg.Record,
		retention:     cfg.Retention,
		slowDelay:     cfg.SlowDelay,
		maxBody:       cfg.MaxBody,
		mailPort:      cfg.MailPort,
		crmPort:       cfg.CRMPort,
		holdBound:     HoldBound,
		closing:       make(chan struct{}),
		dedupeDefault: true,
		dedupe:        make(map[string]bool),
		retentions:    make(map[string]time.Duration),
	}
	if w.retention == 0 {
		w.retention = DefaultRetention
	}
	if w.slowDelay == 0 {
		w.slowDelay = DefaultSlowDelay
	}
	if w.maxBody == 0 {
		w.maxBody = DefaultMaxBody
	}
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("new world: token nonce: %w", err)
	}
	w.tokenNonce = hex.EncodeToString(nonce[:])
	w.baseCtx, w.cancelBase = context.WithCancel(context.Background())

	err := w.db.View(func(tx *store.Tx) error {
		w.offset = time.Duration(int64(store.DecodeU64(tx.Get(BucketMeta, []byte(keyClockOffset)))))
		return nil
	})
	if err != nil {
		w.cancelBase()
		return nil, fmt.Errorf("new world: load clock offset: %w", err)
	}
	if cfg.ReadOnly {
		return w, nil
	}
	if err := w.dropInFlight(); err != nil {
		w.cancelBase()
		return nil, fmt.Errorf("new world: %w", err)
	}
	return w, nil
}

// Now is the world clock: the injected clock plus the persisted offset.
func (w *World) Now() time.Time {
	now := w.clock.Now()
	w.mu.Lock()
	off := w.offset
	w.mu.Unlock()
	return now.Add(off)
}

// Offset is how far Advance has moved the world clock ahead of the injected clock.
func (w *World) Offset() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.offset
}

// Advance moves the world clock forward by d and persists the new offset,
// so it survives restarts. d must not be negative.
func (w *World) Advance(d time.Duration) error { return w.AdvanceRecorded(d, nil) }

// ClockMove is a move of the world clock, as AdvanceRecorded tells its
// record function: By is the move, Offset the clock's lead on the
// injected clock after it, At the world time after it, and Expired the
// keys the move expired (stored, not yet expired before it, expired
// after), in key order.
type ClockMove struct {
	By, Offset time.Duration
	At         time.Time
	Expired    []StoredKey
}

// AdvanceRecorded is Advance that calls record (when not nil) inside the
// transaction that moves the clock, with the move and the keys it
// expires, so the move and what records it commit together. Finding the
// keys reads the whole key store: a move costs time in the number of keys
// stored.
func (w *World) AdvanceRecorded(d time.Duration, record func(tx *store.Tx, m ClockMove) error) error {
	if d < 0 {
		return fmt.Errorf("advance world clock by %v: negative duration", d)
	}
	w.advanceMu.Lock()
	defer w.advanceMu.Unlock()
	var next time.Duration
	err := w.db.Update(func(tx *store.Tx) error {
		cur := time.Duration(int64(store.DecodeU64(tx.Get(BucketMeta, []byte(keyClockOffset)))))
		next = cur + d
		if next < cur {
			return fmt.Errorf("clock offset overflows")
		}
		if err := tx.Put(BucketMeta, []byte(keyClockOffset), store.U64(uint64(int64(next)))); err != nil {
			return err
		}
		if record == nil {
			return nil
		}
		base := w.clock.Now()
		m := ClockMove{By: d, Offset: next, At: base.Add(next)}
		var err error
		if m.Expired, err = w.expiring(tx, base.Add(cur), m.At); err != nil {
			return err
		}
		return record(tx, m)
	})
	if err != nil {
		return fmt.Errorf("advance world clock by %v: %w", d, err)
	}
	w.mu.Lock()
	w.offset = next
	w.mu.Unlock()
	return nil
}

// expiring lists the completed keys in tx that were remembered at world
// time before and are forgotten at after. A record that does not decode
// is passed over: the move is not the place to report it (the key store's
// readers do), and it must not keep the clock from moving.
func (w *World) expiring(tx *store.Tx, before, after time.Time) ([]StoredKey, error) {
	var out []StoredKey
	err := tx.ScanInPlace(BucketKeys, func(k, v []byte) bool {
		rec, ok := decodeKeyRecord(string(k), v)
		if ok && !rec.InFlight && !w.expired(rec, before) && w.expired(rec, after) {
			// The record's slices are the store's, valid only now: keep a copy.
			rec, _ = decodeKeyRecord(string(k), bytes.Clone(v))
			out = append(out, w.storedKey(string(k), rec, after))
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("find the keys the move expires: %w", err)
	}
	return out, nil
}

// SetDedupe switches the key handling of the world's keyed endpoints on or
// off for one execution; execution "" sets the default, which starts on.
// With dedupe off, requests execute every time, key or not. The setting is
// kept in memory only.
func (w *World) SetDedupe(execution string, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if execution == "" {
		w.dedupeDefault = on
		return
	}
	w.dedupe[execution] = on
}

// ClearDedupe removes an execution's override; execution "" restores the
// default to on.
func (w *World) ClearDedupe(execution string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if execution == "" {
		w.dedupeDefault = true
		return
	}
	delete(w.dedupe, execution)
}

// SetRetention sets how long keys stored by one execution's requests are
// remembered, by the world clock; zero restores the world's default. It is
// the provider setting a scenario's policy.retention stands for. The setting
// is kept in memory; the retention is stored with each key.
func (w *World) SetRetention(execution string, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d <= 0 {
		delete(w.retentions, execution)
		return
	}
	w.retentions[execution] = d
}

// RetentionFor is the key retention applied to an execution's requests.
func (w *World) RetentionFor(execution string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d, ok := w.retentions[execution]; ok && execution != "" {
		return d
	}
	return w.retention
}

// Dedupe reports whether key handling is on for an execution.
func (w *World) Dedupe(execution string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if on, ok := w.dedupe[execution]; ok && execution != "" {
		return on
	}
	return w.dedupeDefault
}

// Reset empties the outbox, the key store, the CRM, the CRM write log and
// the clock offset. Dedupe settings are kept.
func (w *World) Reset() error {
	w.advanceMu.Lock()
	defer w.advanceMu.Unlock()
	if err := w.db.Update(func(tx *store.Tx) error {
		return tx.Clear(Buckets...)
	}); err != nil {
		return fmt.Errorf("reset world: %w", err)
	}
	w.mu.Lock()
	w.offset = 0
	w.mu.Unlock()
	return nil
}

// Start listens on 127.0.0.1 on an ephemeral port for each service and
// serves them until Close.
func (w *World) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("start world: %w", ErrClosed)
	}
	if w.started {
		return fmt.Errorf("start world: %w", ErrStarted)
	}
	mailLn, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", w.mailPort))
	if err != nil {
		return fmt.Errorf("start world: listen for mail: %w", err)
	}
	crmLn, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", w.crmPort))
	if err != nil {
		mailLn.Close()
		return fmt.Errorf("start world: listen for crm: %w", err)
	}
	w.started = true
	w.mailURL = "http://" + mailLn.Addr().String()
	w.crmURL = "http://" + crmLn.Addr().String()
	for _, s := range []struct {
		ln net.Listener
		h  http.Handler
	}{{mailLn, w.MailHandler()}, {crmLn, w.CRMHandler()}} {
		srv := &http.Server{
			Handler:           s.h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
			MaxHeaderBytes:    64 << 10,
			BaseContext:       func(net.Listener) context.Context { return w.baseCtx },
			// The host may be drawing a TUI: keep net/http's log off stderr.
			ErrorLog: log.New(io.Discard, "", 0),
		}
		w.servers = append(w.servers, srv)
		w.serveWG.Add(1)
		go func(srv *http.Server, ln net.Listener) {
			defer w.serveWG.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				w.mu.Lock()
				w.serveErrs = append(w.serveErrs, err)
				w.mu.Unlock()
			}
		}(srv, s.ln)
	}
	return nil
}

// MailURL is the mail API's base URL, "http://127.0.0.1:PORT", once started.
func (w *World) MailURL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mailURL
}

// CRMURL is the CRM's base URL, "http://127.0.0.1:PORT", once started.
func (w *World) CRMURL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.crmURL
}

// Close stops the servers. Requests held by a timeout fault or sleeping in
// a slow response are released at once; other in-flight handlers get a few
// seconds to finish before their connections are closed. The store is left
// open: it belongs to the caller.
func (w *World) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	servers := w.servers
	w.mu.Unlock()

	w.closeOnce.Do(func() {
		close(w.closing)
		w.cancelBase()
	})
	// Held requests were released above, so handlers finish at once. What
	// can still be open are connections that never sent a request, which
	// Shutdown would wait seconds for: after a short grace they are closed.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			if cerr := srv.Close(); cerr != nil {
				errs = append(errs, fmt.Errorf("close world: %w", cerr))
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, fmt.Errorf("close world: %w", err))
			}
		}
	}
	w.serveWG.Wait()
	w.mu.Lock()
	for _, err := range w.serveErrs {
		errs = append(errs, fmt.Errorf("close world: serve: %w", err))
	}
	w.mu.Unlock()
	return errors.Join(errs...)
}

// emit reports activities to the observer.
func (w *World) emit(acts ...Activity) {
	if w.observe == nil {
		return
	}
	for _, a := range acts {
		w.observe(a)
	}
}
