// Package gen fills a database with synthetic execution histories, for
// benchmarks and for trying the explorer at scale.
//
// The histories are not random events: each execution plays one of the
// catalogue's shapes (naive, safe, crash then resume, invoice-crm, an unsafe
// tool that escalates, a retry policy that gives up) through a small
// re-enactment of what the worker and the host record for it: turns, tool
// calls, every attempt with its injected fault and outcome, retries, journal
// writes and replays, worker kills and the gaps before resumes. The tool
// calls that reach a provider are applied with world.Apply, the same code the
// simulated services run, so the outbox (with its attribution and
// per-execution index), the key store and the CRM hold exactly what real
// requests would have left, and `retrylab check` finds the ledger and the
// histories consistent.
//
// Writes go through the store in large transactions (many executions per
// fsynced commit), and the output depends only on the options and on what
// the database held before: the same seed gives the same histories.
package gen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// DefaultStart is when the first generated execution starts unless
// Options.Start says otherwise. A fixed time keeps the output deterministic.
var DefaultStart = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// DefaultBatchEvents is how many events one transaction carries at most
// (an execution is never split between transactions).
const DefaultBatchEvents = 20000

// ScenarioPrefix starts the scenario name of every generated execution, so
// they are never mistaken for runs of the catalogue's scenarios (whose
// fault plans they do not follow step by step) and `retrylab check` holds
// them to the model read from their histories.
const ScenarioPrefix = "gen-"

// ErrExists means a generated execution id is already in the database:
// generate into a fresh file, or with another seed.
var ErrExists = errors.New("execution already exists")

// Options configure Generate.
type Options struct {
	// Executions is how many executions to generate.
	Executions int
	// AttemptsPerStep is how many attempts each tool call makes before it
	// succeeds (or, for the shapes that end badly, gives up or dies); the
	// retry policy of every generated execution allows that many.
	AttemptsPerStep int
	// Seed chooses the histories; the same seed gives the same output.
	Seed uint64
	// Start is the first execution's start time. Zero means DefaultStart.
	Start time.Time
	// BatchEvents bounds the events of one transaction. Zero means
	// DefaultBatchEvents.
	BatchEvents int
	// Progress, if set, is called after every committed transaction.
	Progress func(Progress)
}

// Progress reports how far Generate has come.
type Progress struct {
	Done, Total int // executions
	Stats       Stats
}

// Stats counts what Generate wrote.
type Stats struct {
	Executions int
	Attempts   int64
	Events     int64
	// Messages is the number of outbox deliveries; CRMWrites of CRM writes.
	Messages  int64
	CRMWrites int64
	// Journal is the number of journal records.
	Journal int64
	// Bytes is the size of the encoded events.
	Bytes    int64
	ByShape  map[string]int
	ByStatus map[history.Status]int
}

func (s *Stats) add(o Stats) {
	s.Executions += o.Executions
	s.Attempts += o.Attempts
	s.Events += o.Events
	s.Messages += o.Messages
	s.CRMWrites += o.CRMWrites
	s.Journal += o.Journal
	s.Bytes += o.Bytes
	if s.ByShape == nil {
		s.ByShape = map[string]int{}
		s.ByStatus = map[history.Status]int{}
	}
	for k, v := range o.ByShape {
		s.ByShape[k] += v
	}
	for k, v := range o.ByStatus {
		s.ByStatus[k] += v
	}
}

// Generate writes opts.Executions synthetic executions into db and returns
// what it wrote. It stops between transactions when ctx is done; what was
// committed stays.
func Generate(ctx context.Context, db *store.DB, opts Options) (Stats, error) {
	if opts.Executions < 0 {
		return Stats{}, fmt.Errorf("generate: negative number of executions")
	}
	if opts.AttemptsPerStep < 1 {
		return Stats{}, fmt.Errorf("generate: attempts per step must be at least 1, not %d", opts.AttemptsPerStep)
	}
	if opts.Start.IsZero() {
		opts.Start = DefaultStart
	}
	if opts.BatchEvents <= 0 {
		opts.BatchEvents = DefaultBatchEvents
	}
	// An execution makes at most two tool calls of about three events per
	// attempt, plus a dozen around them.
	perExec := 6*opts.AttemptsPerStep + 12
	batch := max(1, opts.BatchEvents/perExec)
	total := Stats{ByShape: map[string]int{}, ByStatus: map[history.Status]int{}}
	for from := 0; from < opts.Executions; from += batch {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		to := min(from+batch, opts.Executions)
		var got Stats
		err := db.Update(func(tx *store.Tx) error {
			// Group commit may run this twice: start from nothing each time.
			got = Stats{ByShape: map[string]int{}, ByStatus: map[history.Status]int{}}
			for i := from; i < to; i++ {
				if err := generateOne(tx, opts, i, &got); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("generate executions %d-%d: %w", from+1, to, err)
		}
		total.add(got)
		if opts.Progress != nil {
			opts.Progress(Progress{Done: to, Total: opts.Executions, Stats: total})
		}
	}
	return total, nil
}

// --- shapes -------------------------------------------------------------------

// A shape is one of the catalogue's stories, with its policy and tools.
type shape struct {
	name   string
	weight int
	play   func(s *sim)
}

var shapes = []shape{
	{"naive", 25, playNaive},
	{"safe", 30, playSafe},
	{"crash", 15, playCrash},
	{"invoice-crm", 20, playInvoiceCRM},
	{"unsafe", 5, playUnsafe},
	{"exhausted", 5, playExhausted},
}

func pickShape(r *rand.Rand) shape {
	total := 0
	for _, s := range shapes {
		total += s.weight
	}
	n := r.IntN(total)
	for _, s := range shapes {
		if n < s.weight {
			return s
		}
		n -= s.weight
	}
	return shapes[0]
}

// tool is a tool as a scenario declares it, with how it is called.
type tool struct {
	name    string
	kind    scenario.Kind
	service string
	method  string
	dedupe  bool
}

var (
	sendEmail    = tool{"send_invoice_email", scenario.KindKeyed, world.ServiceMail, "POST", true}
	sendNoDedupe = tool{"send_invoice_email", scenario.KindKeyed, world.ServiceMail, "POST", false}
	recordCRM    = tool{"record_invoice", scenario.KindIdempotent, world.ServiceCRM, "PUT", true}
	openTicket   = tool{"open_ticket", scenario.KindUnsafe, world.ServiceCRM, "POST", true}
)

var (
	customers = []string{"jordan@acme.dev", "sam@globex.io", "alex@initech.com", "kim@umbrella.co",
		"lee@hooli.xyz", "ana@stark.industries", "noor@wayne.enterprises", "eli@wonka.biz"}
	months = []string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
)

// invoice is what one execution is about.
type invoice struct {
	to, month, id string
}

func (v invoice) emailArgs() map[string]any {
	return map[string]any{"to": v.to, "subject": "Your " + v.month + " invoice", "body": "…"}
}

// playNaive is window 1 without defences: the first attempt's response is
// lost after the send, the retries go out without a key, and the outbox
// ends with two invoices. Some executions retry at the agent level: the
// policy gives up halfway and a new turn calls the tool again, same step.
func playNaive(s *sim) {
	s.begin(history.Policy{})
	s.turn("Sending the " + s.inv.month + " invoice to " + s.inv.to)
	c := s.call("step-4", sendEmail, s.inv.emailArgs())
	m := s.m
	plan := map[int]fault.Point{}
	if m >= 2 {
		plan[1] = fault.TimeoutAfterEffect
	}
	if m >= 2 && s.r.IntN(3) == 0 {
		// An agent-level retry: the policy allows half the attempts, then
		// the agent calls the tool again in a new turn, same step.
		half := (m + 1) / 2
		c.maxAttempts = half
		if _, ok := s.attempts(c, plan, half, false); !ok {
			s.turn("The send timed out; trying again")
			s.schedule(c)
			s.attempts(c, plan, m-half, true)
		}
	} else {
		s.attempts(c, plan, m, true)
	}
	s.complete()
}

// playSafe is the article's safe mode: the key absorbs the retry after a
// lost response, the result is journaled, and half the executions are run
// again later and answered from the journal.
func playSafe(s *sim) {
	s.begin(history.Policy{Keys: true, Journal: true})
	s.turn("Sending the " + s.inv.month + " invoice to " + s.inv.to)
	c := s.call("step-4", sendEmail, s.inv.emailArgs())
	plan := map[int]fault.Point{}
	if s.m >= 2 {
		plan[1] = fault.TimeoutAfterEffect
	}
	rec, _ := s.attempts(c, plan, s.m, true)
	s.complete()
	if s.r.IntN(2) == 0 {
		s.advance(randDur(s.r, time.Minute, 2*time.Hour))
		s.startRun()
		s.turn("Sending the " + s.inv.month + " invoice to " + s.inv.to)
		s.replay(c, rec)
		s.complete()
	}
}

// playCrash is window 2: the worker dies after the send, before anything
// is recorded. Most executions are resumed after a gap, and the resumed
// run sends again (with a key, the provider replays instead).
func playCrash(s *sim) {
	pol := history.Policy{Keys: s.r.IntN(2) == 0}
	s.begin(pol)
	s.turn("Sending the " + s.inv.month + " invoice to " + s.inv.to)
	c := s.call("step-4", sendEmail, s.inv.emailArgs())
	plan := map[int]fault.Point{s.m: fault.CrashAfterEffect}
	s.attempts(c, plan, s.m, true)
	if s.r.IntN(10) < 3 {
		return // left killed, waiting for a resume
	}
	s.advance(randDur(s.r, 20*time.Second, 20*time.Minute))
	s.startRun()
	s.turn("Sending the " + s.inv.month + " invoice to " + s.inv.to)
	s.schedule(c)
	s.attempts(c, nil, 1, true)
	s.complete()
}

// playInvoiceCRM is two steps with a crash between them: the email is
// journaled, the worker dies, and the resumed run replays the email from
// the journal and writes the CRM row once.
func playInvoiceCRM(s *sim) {
	s.begin(history.Policy{Journal: true})
	s.turn("Sending the " + s.inv.month + " invoice to " + s.inv.to)
	email := s.call("step-4", sendNoDedupe, s.inv.emailArgs())
	rec, _ := s.attempts(email, map[int]fault.Point{s.m: fault.CrashAfterRecord}, s.m, true)
	if s.r.IntN(100) < 15 {
		return // left killed
	}
	s.advance(randDur(s.r, 5*time.Second, 10*time.Minute))
	s.startRun()
	s.turn("Sending the " + s.inv.month + " invoice to " + s.inv.to)
	s.replay(email, rec)
	s.turn("Recording the invoice in the CRM")
	var msgID string
	var res struct {
		MessageID string `json:"message_id"`
	}
	if json.Unmarshal(rec.Result, &res) == nil {
		msgID = res.MessageID
	}
	crm := s.call("step-5", recordCRM, map[string]any{"id": s.inv.id, "customer": s.inv.to,
		"invoice": s.inv.month, "message_id": msgID})
	s.attempts(crm, nil, s.m, true)
	s.complete()
}

// playUnsafe is a tool that cannot be repeated safely: its first call
// times out after the effect, and the agent escalates instead of retrying.
func playUnsafe(s *sim) {
	s.begin(history.Policy{Journal: true})
	s.turn("Opening a billing ticket for the " + s.inv.month + " invoice")
	c := s.call("step-6", openTicket, map[string]any{"customer": s.inv.to,
		"subject": s.inv.month + " invoice sent", "priority": "low"})
	s.attempts(c, map[int]fault.Point{1: fault.TimeoutAfterEffect}, 1, true)
}

// playExhausted is a provider that keeps failing: every attempt meets a
// fault before the effect, and the retry policy gives up.
func playExhausted(s *sim) {
	s.begin(history.Policy{Keys: true, Journal: true})
	s.turn("Sending the " + s.inv.month + " invoice to " + s.inv.to)
	c := s.call("step-4", sendEmail, s.inv.emailArgs())
	if _, ok := s.attempts(c, nil, s.m, false); !ok {
		s.stop(history.ExecutionFailed, c.step, history.StatusFailed, c.step+": the retry policy gave up")
	}
}

// --- one execution ----------------------------------------------------------

// generateOne writes execution i. Everything it writes follows from the
// options, i and what tx holds, so a rerun of the transaction writes the same.
func generateOne(tx *store.Tx, opts Options, i int, st *Stats) error {
	r := rand.New(rand.NewPCG(opts.Seed, uint64(i)))
	id := executionID(opts.Seed, uint64(i))
	if tx.Execution(id) != nil {
		return fmt.Errorf("%w: %s (generate into a fresh database or with another seed)", ErrExists, id)
	}
	sh := pickShape(r)
	start := opts.Start.Add(time.Duration(i)*45*time.Second + randDur(r, 0, 40*time.Second))
	s := &sim{tx: tx, r: r, m: opts.AttemptsPerStep, now: start, st: st,
		x:   history.Execution{ID: id, Scenario: ScenarioPrefix + sh.name, Started: start},
		inv: invoice{to: customers[r.IntN(len(customers))], month: months[r.IntN(len(months))], id: "inv_" + id[5:]}}
	sh.play(s)
	if s.err != nil {
		return fmt.Errorf("execution %s: %w", id, s.err)
	}
	if err := history.Put(tx, s.x); err != nil {
		return err
	}
	// Put seals a finished execution's history; a killed one's is written
	// whole here too, so its last chunk is stored compressed as well.
	if err := tx.SealHistory(id); err != nil {
		return err
	}
	st.Executions++
	st.ByShape[sh.name]++
	st.ByStatus[s.x.Status]++
	return nil
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// executionID names execution i of a seed: "exec_" and eight Crockford
// base32 digits of a keyed permutation of i, so ids within one seed never
// collide and look as opaque as real ones.
func executionID(seed, i uint64) string {
	const half = 20
	const mask = 1<<half - 1
	l, r := (i>>half)&mask, i&mask
	// A four-round Feistel network keyed by the seed: a bijection on 40 bits.
	for round := uint64(0); round < 4; round++ {
		f := mix(seed^round*0x9e3779b97f4a7c15^mix(r+round)) & mask
		l, r = r, l^f
	}
	v := l<<half | r
	out := make([]byte, 8)
	for k := 7; k >= 0; k-- {
		out[k] = crockford[v&31]
		v >>= 5
	}
	return "exec_" + string(out)
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func randDur(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

// sim re-enacts one execution: what the host records (runs, attempts,
// faults, kills) and what the worker reports (turns, calls, outcomes,
// retries, journal writes), in their order, on a simulated clock.
type sim struct {
	tx  *store.Tx
	r   *rand.Rand
	m   int // attempts per step
	now time.Time
	x   history.Execution
	inv invoice
	st  *Stats
	err error

	run      int
	turnN    int
	pid      int
	attempt  map[string]int // last attempt number per step, over runs
	planUsed map[string]bool
}

// call is one tool call of the scenario.
type call struct {
	step        string
	tool        tool
	args        map[string]any
	canon       json.RawMessage // canonical arguments, as scheduled
	body        []byte          // the request body, as the worker marshals it
	path        string
	key         string
	maxAttempts int
	timeout     time.Duration
}

func (s *sim) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *sim) advance(d time.Duration) { s.now = s.now.Add(d) }

// emit appends an event stamped with the simulated clock and the run.
// effect records what the provider did for attempt a of c, as the host
// does (EffectObserved, and the execution's count of sends per intent).
func (s *sim) effect(c *call, a int, ref string) {
	fx := &history.Effect{Service: c.tool.service, ID: ref}
	if c.tool.service == world.ServiceMail {
		var m struct{ To, Subject string }
		_ = json.Unmarshal(c.body, &m)
		fx.Target, fx.Summary = m.To, m.Subject
		if s.x.Sends == nil {
			s.x.Sends = map[string]int{}
		}
		k := history.SendIntent(m.To, m.Subject)
		s.x.Sends[k]++
		if s.x.Sends[k] > 1 {
			s.x.Duplicates = true
		}
	}
	s.emit(history.Event{Type: history.EffectObserved, Step: c.step, Attempt: a, Key: c.key, Effect: fx})
}

func (s *sim) emit(ev history.Event) history.Event {
	if s.err != nil {
		return ev
	}
	ev.Time = s.now
	if ev.Run == 0 {
		ev.Run = s.run
	}
	p, err := history.Prepare(ev)
	if err != nil {
		s.fail(err)
		return ev
	}
	size, err := p.Append(s.tx, s.x.ID, &ev)
	if err != nil {
		s.fail(err)
		return ev
	}
	s.st.Events++
	s.st.Bytes += int64(size)
	if ev.Type == history.AttemptStarted {
		s.st.Attempts++
	}
	return ev
}

// setStatus is the execution record's update that goes with an event.
func (s *sim) setStatus(status history.Status, errText string) {
	s.x.Status = status
	s.x.Updated = s.now
	s.x.Error = errText
	if status.Finished() && s.x.Ended.IsZero() {
		s.x.Ended = s.now
	}
}

// begin creates the execution and starts its first run.
func (s *sim) begin(p history.Policy) {
	s.x.Policy = p
	s.attempt = map[string]int{}
	s.planUsed = map[string]bool{}
	s.run = 1
	s.x.Runs = 1
	s.setStatus(history.StatusRunning, "")
	s.emit(history.Event{Type: history.ExecutionStarted, Scenario: s.x.Scenario, Text: p.String()})
	s.advance(randDur(s.r, 2*time.Millisecond, 15*time.Millisecond))
	s.worker()
}

// startRun is a resume, or a run again after the execution finished.
func (s *sim) startRun() {
	s.run++
	s.x.Runs = s.run
	s.turnN = 0
	s.x.Ended = time.Time{}
	s.setStatus(history.StatusRunning, "")
	s.worker()
}

func (s *sim) worker() {
	s.pid = 2000 + s.r.IntN(60000)
	s.emit(history.Event{Type: history.WorkerStarted, PID: s.pid})
	s.advance(randDur(s.r, 3*time.Millisecond, 20*time.Millisecond))
}

func (s *sim) turn(text string) {
	s.turnN++
	s.emit(history.Event{Type: history.TurnStarted, Turn: s.turnN, Text: text})
	s.advance(randDur(s.r, 200*time.Millisecond, 2*time.Second)) // the model thinking
}

// call prepares a tool call and schedules it.
func (s *sim) call(step string, t tool, args map[string]any) *call {
	c := &call{step: step, tool: t, args: args, maxAttempts: s.m, timeout: 300 * time.Millisecond}
	if s.r.IntN(2) == 0 {
		c.timeout = time.Second
	}
	var err error
	if c.canon, err = idemkey.Canonical(args); err != nil {
		s.fail(err)
		return c
	}
	if c.body, err = json.Marshal(args); err != nil {
		s.fail(err)
		return c
	}
	c.path = "/v1/send"
	if t.service == world.ServiceCRM {
		c.path = "/v1/records"
		if t.method == "PUT" {
			c.path += "/" + s.inv.id
		}
	}
	if s.x.Policy.Keys && t.kind == scenario.KindKeyed {
		if c.key, err = idemkey.Derive(s.x.ID, step, args, idemkey.LongDigits); err != nil {
			s.fail(err)
		}
	}
	s.schedule(c)
	return c
}

func (s *sim) schedule(c *call) {
	s.emit(history.Event{Type: history.ToolCallScheduled, Turn: s.turnN, Step: c.step, Tool: c.tool.name,
		Args: c.canon, Text: string(c.tool.kind)})
	s.advance(randDur(s.r, time.Millisecond, 5*time.Millisecond))
}

// attempts makes one round of up to n attempts of c, as the worker's retry
// loop does. plan maps attempt numbers to the fault they meet; an attempt
// without one fails with a fault before the effect (a timeout or a server
// error), except the round's n-th when last is set, which succeeds. The
// round gives up, without scheduling a retry, after c.maxAttempts failed
// attempts. It returns the journal record when the step was recorded, and
// whether the step finished.
func (s *sim) attempts(c *call, plan map[int]fault.Point, n int, last bool) (history.JournalRecord, bool) {
	for k := 1; k <= n && s.err == nil; k++ {
		s.attempt[c.step]++
		a := s.attempt[c.step]
		point := plan[a]
		if point == "" {
			if !last || k < n {
				point = fault.TimeoutBeforeEffect
				if s.r.IntN(3) == 0 {
					point = fault.ServerError
				}
			}
		}
		rec, done, stopped := s.one(c, a, point)
		if stopped || done {
			return rec, done
		}
		if k == n || (c.maxAttempts > 0 && k >= c.maxAttempts) {
			break // the policy gives up: no retry is scheduled
		}
		delay := min(50*time.Millisecond<<min(k-1, 20), 5*time.Second)
		s.emit(history.Event{Type: history.RetryScheduled, Step: c.step, Attempt: a, Delay: delay, MaxAttempts: c.maxAttempts})
		s.advance(delay)
	}
	return history.JournalRecord{}, false
}

// one plays attempt a of c meeting fault point (none when ""). Every fault
// of a generated execution is part of its plan. done says the step
// finished (answered ok and, with a journal, recorded); stopped says the
// execution ended or its worker died.
func (s *sim) one(c *call, a int, point fault.Point) (rec history.JournalRecord, done, stopped bool) {
	var headers map[string]string
	if c.key != "" {
		headers = map[string]string{world.HeaderIdempotencyKey: c.key}
	}
	method := c.tool.method
	s.emit(history.Event{Type: history.AttemptStarted, Step: c.step, Tool: c.tool.name, Attempt: a,
		MaxAttempts: c.maxAttempts, Key: c.key,
		Request: &history.Exchange{Method: method, URL: c.path, Headers: headers, Body: c.body}})
	if point != "" {
		s.emit(history.Event{Type: history.FaultInjected, Step: c.step, Attempt: a, Fault: string(point), Plan: 1,
			Text: "from the scenario's fault plan"})
	}
	started := s.now
	s.advance(randDur(s.r, 500*time.Microsecond, 3*time.Millisecond))

	// The provider's side.
	var reply world.Reply
	reached := point != fault.TimeoutBeforeEffect && point != fault.ServerError && point != fault.CrashBeforeCall
	if reached {
		var err error
		reply, err = world.Apply(s.tx, world.Call{Service: c.tool.service, Method: method, Path: c.path, Body: c.body,
			Key: c.key, Dedupe: c.tool.dedupe, Now: s.now,
			Attribution: world.Attribution{Execution: s.x.ID, Step: c.step, Attempt: a, Run: s.run}})
		if err != nil {
			s.fail(err)
			return rec, false, true
		}
		if !reply.Replayed && reply.Status >= 200 && reply.Status < 300 {
			if c.tool.service == world.ServiceMail {
				s.st.Messages++
			} else {
				s.st.CRMWrites++
			}
			s.effect(c, a, reply.Ref)
		}
	}
	if point == fault.CrashAfterEffect || point == fault.CrashBeforeCall {
		s.crash(point)
		return rec, false, true
	}

	// The caller's side.
	fin := history.Event{Type: history.AttemptFinished, Step: c.step, Tool: c.tool.name, Attempt: a, Key: c.key}
	switch point {
	case fault.TimeoutBeforeEffect, fault.TimeoutAfterEffect:
		s.now = started.Add(c.timeout + randDur(s.r, 100*time.Microsecond, 3*time.Millisecond))
		fin.Outcome, fin.Error = history.OutcomeTimeout, fmt.Sprintf("no response within %s", c.timeout)
	case fault.ServerError:
		fe := world.ServerErrorReply()
		s.advance(randDur(s.r, time.Millisecond, 8*time.Millisecond))
		fin.Outcome = history.OutcomeError
		fin.Response = &history.Exchange{Status: fe.Status, Headers: map[string]string{"Content-Type": "application/problem+json"}, Body: fe.Body}
	default:
		s.advance(randDur(s.r, 10*time.Millisecond, 120*time.Millisecond))
		h := map[string]string{"Content-Type": "application/json"}
		if reply.Replayed {
			h[world.HeaderIdempotentReplayed] = "true"
		}
		fin.Response = &history.Exchange{Status: reply.Status, Headers: h, Body: reply.Body}
		fin.Deduplicated = reply.Replayed
		switch {
		case reply.Status >= 200 && reply.Status < 300:
			fin.Outcome = history.OutcomeOK
		case reply.Status == 409:
			fin.Outcome = history.OutcomeConflict
		case reply.Status == 422:
			fin.Outcome = history.OutcomeMismatch
		default:
			fin.Outcome = history.OutcomeRejected
		}
	}
	fin.Duration = s.now.Sub(started)
	s.emit(fin)

	if fin.Outcome == history.OutcomeOK {
		if s.x.Policy.Journal {
			rec = history.JournalRecord{Step: c.step, Tool: c.tool.name, Key: c.key, Attempt: a, Run: s.run,
				Result: reply.Body, Recorded: s.now}
			s.record(rec)
		}
		if point == fault.CrashAfterRecord {
			s.crash(point)
			return rec, true, true
		}
		return rec, true, false
	}
	if c.tool.kind == scenario.KindUnsafe && (fin.Outcome == history.OutcomeTimeout || fin.Outcome == history.OutcomeError) {
		s.stop(history.Escalated, c.step, history.StatusEscalated, fmt.Sprintf(
			"%s: %s outcome unknown (%s) and the tool is unsafe to repeat; stopping for a human", c.step, c.tool.name, fin.Outcome))
		return rec, false, true
	}
	return rec, false, false
}

// record writes a step's journal record and its StepRecorded event, as the
// runtime's journal PUT does in one commit.
func (s *sim) record(rec history.JournalRecord) {
	data, err := history.EncodeJournal(s.x.ID, rec.Step, rec)
	if err != nil {
		s.fail(err)
		return
	}
	if err := s.tx.PutJournal(s.x.ID, rec.Step, data); err != nil {
		s.fail(err)
		return
	}
	s.st.Journal++
	s.emit(history.Event{Type: history.StepRecorded, Step: rec.Step, Tool: rec.Tool, Key: rec.Key,
		Attempt: rec.Attempt, Result: rec.Result})
	s.advance(randDur(s.r, time.Millisecond, 4*time.Millisecond))
}

// replay answers a recorded step from the journal: no request is sent.
func (s *sim) replay(c *call, rec history.JournalRecord) {
	s.emit(history.Event{Type: history.StepReplayed, Step: c.step, Tool: c.tool.name, Key: rec.Key,
		Attempt: rec.Attempt, Result: rec.Result, ResultRun: rec.Run})
	s.advance(randDur(s.r, time.Millisecond, 3*time.Millisecond))
}

// crash is the worker killing itself at a crash fault; the host records it.
func (s *sim) crash(p fault.Point) {
	s.advance(randDur(s.r, time.Millisecond, 10*time.Millisecond))
	s.setStatus(history.StatusKilled, "")
	s.emit(history.Event{Type: history.WorkerCrashed, ExitCode: 137, Fault: string(p),
		Error: "killed by the injected fault: " + p.Describe(), PID: s.pid})
}

// stop ends the execution early: failed or escalated.
func (s *sim) stop(typ history.Type, step string, status history.Status, msg string) {
	s.setStatus(status, msg)
	s.emit(history.Event{Type: typ, Step: step, Error: msg})
}

// complete ends the execution well.
func (s *sim) complete() {
	if s.err != nil || s.x.Status != history.StatusRunning {
		return
	}
	s.advance(randDur(s.r, time.Millisecond, 5*time.Millisecond))
	s.setStatus(history.StatusCompleted, "")
	s.emit(history.Event{Type: history.ExecutionCompleted})
}
