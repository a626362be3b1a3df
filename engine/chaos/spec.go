// Package chaos runs many executions of randomly planned scenarios through
// real faults and real kills, and then holds the database to the checker.
//
// Every run's plan (its scenario, policy, faults, and whether it is killed
// from outside or has its key expire) is derived from the seed and the run's
// index with math/rand/v2, so a seed always plans the same runs; only the
// moments of the kills depend on timing. The runs are carried out by a host
// process (the same binary, as `retrylab chaos-host`) that the runner kills
// with SIGKILL at random moments and starts again on the same database:
// each new host must pass the store's consistency check, resumes every
// execution the kill interrupted, and goes on.
//
// The engine knows nothing of screens: progress is reported through a
// callback, which the CLI shows as a progress bar or plain lines.
package chaos

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/retrylab/retrylab/engine/check"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
)

// Template names the shape of a chaos scenario.
type Template string

// The templates: a single send, or two steps.
const (
	TemplateSend       Template = "send"        // one keyed send
	TemplateUnsafeSend Template = "unsafe-send" // one send nothing dedupes: escalates on an unknown outcome
	TemplateSendCRM    Template = "send-crm"    // keyed send, then an upsert that records the message id
	TemplateCreateSend Template = "create-send" // keyed CRM create, then a keyed send naming the record
	TemplateUpsertRead Template = "upsert-read" // idempotent upsert, then a read
)

// Templates lists every template.
var Templates = []Template{TemplateSend, TemplateUnsafeSend, TemplateSendCRM, TemplateCreateSend, TemplateUpsertRead}

// Bugs the runner can plant on purpose, to show the checker catching them.
// They exist for tests and demonstrations only.
const (
	// BugKeyFromAttempt makes every generated agent mix the attempt number
	// into its idempotency keys, so a retry carries a new key.
	BugKeyFromAttempt = "key-from-attempt"
)

// generation is the version of the generator, part of every scenario name
// so a checker never mistakes another generator's plan for this one's.
const generation = 1

// ExpireBy is how far the world clock jumps in a key-expiry run: past the
// default 24 h retention.
const ExpireBy = 25 * time.Hour

// Spec is the plan of one chaos run.
type Spec struct {
	Seed      uint64
	Index     int
	Template  Template
	Policy    history.Policy
	Faults    []scenario.Fault
	Timeout   time.Duration // per attempt
	Interval  time.Duration // first retry interval
	KillAfter time.Duration // > 0: kill the worker from outside this long after the start
	// ExpireKeys moves the world clock past the retention right after the
	// execution's first effect.
	ExpireKeys bool
}

// Name is the scenario's name: it encodes the generator, seed and index, so
// any host (and the checker) can regenerate the plan from it.
func (s Spec) Name() string { return fmt.Sprintf("chaos%d-%d-%d", generation, s.Seed, s.Index) }

// Execution is the run's fixed execution id.
func (s Spec) Execution() string { return fmt.Sprintf("exec_s%d_r%05d", s.Seed, s.Index) }

// ParseName reverses Name.
func ParseName(name string) (seed uint64, index int, ok bool) {
	rest, found := strings.CutPrefix(name, fmt.Sprintf("chaos%d-", generation))
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	seed, err := strconv.ParseUint(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	index, err = strconv.Atoi(b)
	if err != nil || index < 0 {
		return 0, 0, false
	}
	return seed, index, true
}

// ParsePolicy reads a --policy value: none, keys, journal, keys+journal or
// all (""), where all picks one at random per run.
func ParsePolicy(s string) (*history.Policy, error) {
	switch strings.TrimSpace(s) {
	case "", "all":
		return nil, nil
	case "none":
		return &history.Policy{}, nil
	case "keys":
		return &history.Policy{Keys: true}, nil
	case "journal":
		return &history.Policy{Journal: true}, nil
	case "keys+journal", "both":
		return &history.Policy{Keys: true, Journal: true}, nil
	}
	return nil, fmt.Errorf("unknown policy %q (valid: none, keys, journal, keys+journal, all)", s)
}

// Generate plans run index of seed. policy fixes the policy; nil picks one
// at random.
func Generate(seed uint64, index int, policy *history.Policy) Spec {
	rng := rand.New(rand.NewPCG(seed, uint64(index)+0x9e3779b97f4a7c15))
	s := Spec{Seed: seed, Index: index}
	s.Template = Templates[rng.IntN(len(Templates))]
	p := check.Policies[rng.IntN(len(check.Policies))]
	if policy != nil {
		p = *policy
	}
	s.Policy = p
	s.Timeout = time.Duration(100+rng.IntN(101)) * time.Millisecond
	s.Interval = time.Duration(10+rng.IntN(11)) * time.Millisecond
	points := fault.All()
	for _, step := range steps(s.Template) {
		n := 0
		switch r := rng.IntN(20); {
		case r < 7:
		case r < 16:
			n = 1
		default:
			n = 2
		}
		attempts := rng.Perm(3)
		for i := 0; i < n; i++ {
			s.Faults = append(s.Faults, scenario.Fault{Step: step, Attempt: attempts[i] + 1, Point: points[rng.IntN(len(points))]})
		}
	}
	switch r := rng.IntN(100); {
	case r < 4 && s.Template == TemplateSend:
		// The fault matrix's last row (docs/FAULTS.md): the key is forgotten between attempts.
		s.ExpireKeys = true
		p := fault.TimeoutAfterEffect
		if rng.IntN(2) == 1 {
			p = fault.CrashAfterEffect
		}
		s.Faults = []scenario.Fault{{Step: "send", Attempt: 1, Point: p}}
		s.Timeout = time.Second // the clock jump must land before the retry
	case r < 16:
		s.KillAfter = time.Duration(1+rng.IntN(80)) * time.Millisecond
	}
	return s
}

func steps(t Template) []string {
	switch t {
	case TemplateSendCRM:
		return []string{"send", "record"}
	case TemplateCreateSend:
		return []string{"create", "send"}
	case TemplateUpsertRead:
		return []string{"record", "read"}
	}
	return []string{"send"}
}

// Scenario builds the run's scenario. bug plants one of the Bug* mistakes.
func (s Spec) Scenario(bug string) *scenario.Scenario {
	to := fmt.Sprintf("customer%d@chaos.test", s.Index)
	record := fmt.Sprintf("inv_s%d_r%d", s.Seed, s.Index)
	send := func(kind scenario.Kind) scenario.Tool { return scenario.Tool{Service: "mail", Op: "send", Kind: kind} }
	scn := &scenario.Scenario{
		Name:      s.Name(),
		Title:     fmt.Sprintf("chaos run %d of seed %d: %s", s.Index, s.Seed, s.Template),
		Execution: s.Execution(),
		Policy: scenario.Policy{
			Keys: s.Policy.Keys, Journal: s.Policy.Journal,
			KeyDigits: 32, KeyFrom: scenario.KeyFromIntent,
			Retry: scenario.Retry{
				Initial: scenario.Duration(s.Interval), Backoff: 1.5, MaxInterval: scenario.Duration(4 * s.Interval),
				MaxAttempts: 8, Timeout: scenario.Duration(s.Timeout),
			},
		},
		Tools:  map[string]scenario.Tool{},
		Faults: s.Faults,
	}
	if bug == BugKeyFromAttempt {
		scn.Policy.KeyFrom = scenario.KeyFromAttempt
	}
	call := func(step, tool string, args map[string]any) scenario.Call {
		return scenario.Call{Step: step, Tool: tool, Args: args}
	}
	mail := map[string]any{"to": to, "subject": fmt.Sprintf("Invoice %d", s.Index), "body": "…"}
	switch s.Template {
	case TemplateSend:
		scn.Tools["send_invoice_email"] = send(scenario.KindKeyed)
		scn.Turns = []scenario.Turn{{Text: "Sending the invoice", Calls: []scenario.Call{call("send", "send_invoice_email", mail)}}}
	case TemplateUnsafeSend:
		scn.Tools["send_invoice_email"] = send(scenario.KindUnsafe)
		scn.Turns = []scenario.Turn{{Text: "Sending the invoice with a tool nothing dedupes", Calls: []scenario.Call{call("send", "send_invoice_email", mail)}}}
	case TemplateSendCRM:
		scn.Tools["send_invoice_email"] = send(scenario.KindKeyed)
		scn.Tools["record_invoice"] = scenario.Tool{Service: "crm", Op: "upsert", Kind: scenario.KindIdempotent}
		scn.Turns = []scenario.Turn{
			{Text: "Sending the invoice", Calls: []scenario.Call{call("send", "send_invoice_email", mail)}},
			{Text: "Recording it in the CRM", Calls: []scenario.Call{call("record", "record_invoice",
				map[string]any{"id": record, "customer": to, "message_id": "${send.message_id}"})}},
		}
	case TemplateCreateSend:
		scn.Tools["open_ticket"] = scenario.Tool{Service: "crm", Op: "create", Kind: scenario.KindKeyed}
		scn.Tools["send_invoice_email"] = send(scenario.KindKeyed)
		mail["subject"] = "Ticket ${create.id}"
		scn.Turns = []scenario.Turn{
			{Text: "Opening a ticket", Calls: []scenario.Call{call("create", "open_ticket", map[string]any{"customer": to, "topic": "invoice"})}},
			{Text: "Telling the customer", Calls: []scenario.Call{call("send", "send_invoice_email", mail)}},
		}
	case TemplateUpsertRead:
		scn.Tools["record_invoice"] = scenario.Tool{Service: "crm", Op: "upsert", Kind: scenario.KindIdempotent}
		scn.Tools["read_invoice"] = scenario.Tool{Service: "crm", Op: "get", Kind: scenario.KindRead}
		scn.Turns = []scenario.Turn{
			{Text: "Recording the invoice", Calls: []scenario.Call{call("record", "record_invoice", map[string]any{"id": record, "customer": to, "amount": 120})}},
			{Text: "Reading it back", Calls: []scenario.Call{call("read", "read_invoice", map[string]any{"id": record})}},
		}
	}
	return scn
}

// YAML is the scenario file of the run, as the catalogue serves it.
func (s Spec) YAML(bug string) ([]byte, error) {
	data, err := yaml.Marshal(s.Scenario(bug))
	if err != nil {
		return nil, fmt.Errorf("chaos scenario %s: %w", s.Name(), err)
	}
	return data, nil
}

// Resolve is a check.Options.Resolve for chaos scenarios: it regenerates
// the plan from the scenario's name. Runs of any --policy share one plan
// shape; the policy itself comes from the execution record.
func Resolve(name string) (check.Plan, bool) {
	seed, index, ok := ParseName(name)
	if !ok {
		return check.Plan{}, false
	}
	s := Generate(seed, index, nil)
	return check.Plan{Scenario: s.Scenario(""), ExpireKeys: s.ExpireKeys}, true
}

// FS serves the scenario files of a seed's runs, generated on demand, so a
// host's catalogue (and so Resume) finds them by name.
type FS struct {
	Seed   uint64
	Policy *history.Policy
	Bug    string
}

// Open implements fs.FS for names "chaos<gen>-<seed>-<index>.yaml"; the
// root directory lists nothing.
func (f FS) Open(name string) (fs.File, error) {
	if name == "." {
		return &dir{}, nil
	}
	base, ok := strings.CutSuffix(name, ".yaml")
	if !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	seed, index, ok := ParseName(base)
	if !ok || seed != f.Seed {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	data, err := Generate(seed, index, f.Policy).YAML(f.Bug)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &file{name: name, data: data}, nil
}

type file struct {
	name string
	data []byte
	off  int
}

func (f *file) Stat() (fs.FileInfo, error) { return info{name: f.name, size: int64(len(f.data))}, nil }
func (f *file) Close() error               { return nil }
func (f *file) Read(p []byte) (int, error) {
	if f.off >= len(f.data) {
		return 0, io.EOF
	}
	n := copy(p, f.data[f.off:])
	f.off += n
	return n, nil
}

type dir struct{}

func (*dir) Stat() (fs.FileInfo, error)         { return info{name: ".", dir: true}, nil }
func (*dir) Close() error                       { return nil }
func (*dir) Read([]byte) (int, error)           { return 0, io.EOF }
func (*dir) ReadDir(int) ([]fs.DirEntry, error) { return nil, nil }

type info struct {
	name string
	size int64
	dir  bool
}

func (i info) Name() string { return i.name }
func (i info) Size() int64  { return i.size }
func (i info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }
