package check

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/internal/plural"
)

// Tally is the count of one policy's operations.
type Tally struct {
	Executions int
	Operations int
	Classes    map[Class]int
	Effects    int
	// Exact and Ranged count operations held to the exact model and to the
	// history-driven range.
	Exact, Ranged int
	Departures    int
	// ExpiredDuplicates counts duplicated operations whose key the provider
	// had forgotten between attempts, as the model predicts.
	ExpiredDuplicates int
}

func newTally() *Tally { return &Tally{Classes: map[Class]int{}} }

// MatrixCell is one cell of the fault matrix: the single-send executions
// of one policy with one fault on the first attempt.
type MatrixCell struct {
	Row    MatrixRow
	Policy string
}

// Report is the verdict on a whole database.
type Report struct {
	Executions int
	Operations int
	// MailEffects and CRMWrites count the ledger's entries.
	MailEffects, CRMWrites int
	// Unattributed counts effects without attribution.
	Unattributed int
	// ByPolicy tallies operations per policy ("none", "keys", "journal",
	// "keys+journal"); effects of no execution are under "-".
	ByPolicy   map[string]*Tally
	Violations []Violation
	// Faults counts injected faults per point.
	Faults map[fault.Point]int
	// Kills counts worker deaths: by a planned crash fault, by a kill from
	// outside, and with a dying host.
	PlannedKills, ExternalKills, HostDeaths int
	// Resumes counts runs after an execution's first.
	Resumes int
	// Statuses counts executions per final status.
	Statuses map[history.Status]int
	// Matrix holds, per cell, how many executions left each outbox count.
	Matrix map[MatrixCell]map[int]int
	// Notes are extra lines to print (the chaos runner's durability checks).
	Notes []string
}

func newReport() *Report {
	r := &Report{ByPolicy: map[string]*Tally{}, Faults: map[fault.Point]int{}, Statuses: map[history.Status]int{},
		Matrix: map[MatrixCell]map[int]int{}}
	for _, p := range Policies {
		r.ByPolicy[p.String()] = newTally()
	}
	return r
}

func (r *Report) tally(policy string) *Tally {
	t := r.ByPolicy[policy]
	if t == nil {
		t = newTally()
		r.ByPolicy[policy] = t
	}
	return t
}

// AddViolation adds a violation found outside the checker (for example a
// durability check of the chaos runner).
func (r *Report) AddViolation(v Violation) { r.Violations = append(r.Violations, v) }

func (r *Report) addLoose(op Operation, why string) {
	t := r.tally("-")
	t.Operations++
	t.Classes[op.Class]++
	t.Effects += op.Effects
	r.Operations++
	r.Violations = append(r.Violations, Violation{Execution: op.Execution, Step: strings.Join(op.Steps, ","), Kind: "unexpected", Detail: why})
}

func (r *Report) add(x history.Execution, w walkTotals, res ExecResult) {
	r.Executions++
	r.Statuses[x.Status]++
	if x.Runs > 1 {
		r.Resumes += x.Runs - 1
	}
	r.PlannedKills += w.kills.planned
	r.ExternalKills += w.kills.external
	r.HostDeaths += w.kills.host
	for p, n := range w.faultCount {
		r.Faults[p] += n
	}
	t := r.tally(x.Policy.String())
	t.Executions++
	for _, op := range res.Operations {
		r.Operations++
		t.Operations++
		t.Classes[op.Class]++
		t.Effects += op.Effects
		switch op.Model {
		case ModelExact:
			t.Exact++
		case ModelRange:
			t.Ranged++
		}
		if op.Departure != "" {
			t.Departures++
		}
		if op.Class == Duplicated && op.KeyExpired {
			t.ExpiredDuplicates++
		}
	}
	r.Violations = append(r.Violations, res.Violations...)
	r.addMatrix(x, w, res)
}

// addMatrix files an undisturbed single-send execution with at most one
// fault, on the first attempt, under its cell of the fault matrix (docs/FAULTS.md).
func (r *Report) addMatrix(x history.Execution, w walkTotals, res ExecResult) {
	if w.opts.Resolve == nil || len(res.Operations) != 1 || res.Operations[0].Model != ModelExact {
		return
	}
	plan, ok := w.opts.Resolve(x.Scenario)
	if !ok || plan.Scenario == nil {
		return
	}
	if _, single := isSingleSend(plan.Scenario); !single {
		return
	}
	var row MatrixRow
	faults := w.firstFaults
	switch w.nFaults {
	case 0:
	case 1:
		if faults[0].Attempt != 1 {
			return
		}
		row.Point = faults[0].Point
	default:
		return
	}
	row.KeyExpired = plan.ExpireKeys
	if row.KeyExpired && row.Point != fault.TimeoutAfterEffect && row.Point != fault.CrashAfterEffect {
		return
	}
	cell := MatrixCell{Row: row, Policy: x.Policy.String()}
	if r.Matrix[cell] == nil {
		r.Matrix[cell] = map[int]int{}
	}
	r.Matrix[cell][res.Operations[0].Effects]++
}

// OK reports whether the check passed: no violation of any kind.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// Write prints the per-policy table, the fault matrix, the totals and the
// verdict, listing at most maxViolations violations (all when <= 0).
func (r *Report) Write(w io.Writer, maxViolations int) {
	fmt.Fprintf(w, "%s, %s; ledger: %s, %s, %d unattributed\n\n",
		plural.Count(r.Executions, "execution"), plural.Count(r.Operations, "operation"),
		plural.Count(r.MailEffects, "message"), plural.Count(r.CRMWrites, "CRM write"), r.Unattributed)
	r.WriteTable(w)
	fmt.Fprintln(w)
	r.WriteMatrix(w)
	fmt.Fprintln(w)
	r.WriteTotals(w)
	fmt.Fprintln(w)
	r.WriteVerdict(w, maxViolations)
}

// WriteTable prints one row per policy with its counts per class.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-13s %6s %6s", "policy", "execs", "ops")
	for _, c := range Classes {
		fmt.Fprintf(w, " %*s", colWidth(c), c)
	}
	fmt.Fprintf(w, " %8s %13s %10s\n", "effects", "exact/range", "departures")
	names := []string{}
	for _, p := range Policies {
		names = append(names, p.String())
	}
	var extra []string
	for name := range r.ByPolicy {
		if !contains(names, name) {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	names = append(names, extra...)
	total := newTally()
	for _, name := range names {
		t := r.ByPolicy[name]
		if t == nil {
			t = newTally()
		}
		writeTallyRow(w, name, t)
		total.Executions += t.Executions
		total.Operations += t.Operations
		total.Effects += t.Effects
		total.Exact += t.Exact
		total.Ranged += t.Ranged
		total.Departures += t.Departures
		total.ExpiredDuplicates += t.ExpiredDuplicates
		for c, n := range t.Classes {
			total.Classes[c] += n
		}
	}
	writeTallyRow(w, "all", total)
	if total.ExpiredDuplicates > 0 {
		fmt.Fprintf(w, "(%d of the duplicated operations had their key forgotten between attempts: the clock was moved past the retention, as planned)\n",
			total.ExpiredDuplicates)
	}
}

func colWidth(c Class) int {
	if n := len(c); n > 4 {
		return n
	}
	return 4
}

func writeTallyRow(w io.Writer, name string, t *Tally) {
	fmt.Fprintf(w, "%-13s %6d %6d", name, t.Executions, t.Operations)
	for _, c := range Classes {
		fmt.Fprintf(w, " %*d", colWidth(c), t.Classes[c])
	}
	fmt.Fprintf(w, " %8d %13s %10d\n", t.Effects, fmt.Sprintf("%d/%d", t.Exact, t.Ranged), t.Departures)
}

// WriteMatrix prints the fault matrix (docs/FAULTS.md) with what was observed: per
// cell, the outbox count of single-send executions, ✓ when every one
// matches the table, ✗ otherwise, and how many executions it covers.
func (r *Report) WriteMatrix(w io.Writer) {
	fmt.Fprintln(w, "fault matrix (docs/FAULTS.md): messages per single keyed send, observed (executions), ✓ = as the table says")
	fmt.Fprintf(w, "%-30s", "fault")
	for _, p := range Policies {
		fmt.Fprintf(w, " %-13s", p.String())
	}
	fmt.Fprintln(w)
	for _, row := range MatrixRows {
		fmt.Fprintf(w, "%-30s", row.Label())
		for _, p := range Policies {
			want := Expected(p, row.Point, row.KeyExpired)
			counts := r.Matrix[MatrixCell{Row: row, Policy: p.String()}]
			fmt.Fprintf(w, " %-13s", matrixCell(want, counts))
		}
		fmt.Fprintln(w)
	}
}

func matrixCell(want int, counts map[int]int) string {
	if len(counts) == 0 {
		return fmt.Sprintf("(%d) —", want)
	}
	var seen []int
	runs := 0
	for n, k := range counts {
		seen = append(seen, n)
		runs += k
	}
	sort.Ints(seen)
	mark := "✓"
	if len(seen) != 1 || seen[0] != want {
		mark = "✗"
	}
	strs := make([]string, len(seen))
	for i, n := range seen {
		strs[i] = fmt.Sprint(n)
	}
	return fmt.Sprintf("%s %s (%d)", strings.Join(strs, ","), mark, runs)
}

// WriteTotals prints the faults injected, the kills and the resumes.
func (r *Report) WriteTotals(w io.Writer) {
	var parts []string
	total := 0
	for _, p := range fault.All() {
		if n := r.Faults[p]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p, n))
			total += n
		}
	}
	fmt.Fprintf(w, "faults injected: %d", total)
	if len(parts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "workers killed: %d (%d by crash faults, %d from outside, %d with their host); resumes: %d\n",
		r.PlannedKills+r.ExternalKills+r.HostDeaths, r.PlannedKills, r.ExternalKills, r.HostDeaths, r.Resumes)
	var st []string
	for _, s := range []history.Status{history.StatusCompleted, history.StatusFailed, history.StatusEscalated, history.StatusKilled, history.StatusRunning} {
		if n := r.Statuses[s]; n > 0 {
			st = append(st, fmt.Sprintf("%s %d", s, n))
		}
	}
	if len(st) > 0 {
		fmt.Fprintf(w, "executions: %s\n", strings.Join(st, ", "))
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, n)
	}
}

// WriteVerdict prints PASS or FAIL and the violations.
func (r *Report) WriteVerdict(w io.Writer, maxViolations int) {
	kj := r.ByPolicy[history.Policy{Keys: true, Journal: true}.String()]
	if kj == nil {
		kj = newTally()
	}
	if r.OK() {
		exact, ranged := 0, 0
		for _, t := range r.ByPolicy {
			exact += t.Exact
			ranged += t.Ranged
		}
		// The duplicated count is the table's; those of a planned key
		// expiry are said to be so, not left out.
		dup := fmt.Sprintf("%d duplicated", kj.Classes[Duplicated])
		if kj.ExpiredDuplicates > 0 {
			dup += fmt.Sprintf(" (%d by a planned key expiry)", kj.ExpiredDuplicates)
		}
		fmt.Fprintf(w, "verdict: PASS — keys+journal: %d lost, %s, %d unexpected; every count as the model predicts (%d exact, %d within range)\n",
			kj.Classes[Lost], dup, kj.Classes[Unexpected], exact, ranged)
		return
	}
	fmt.Fprintf(w, "verdict: FAIL — %s\n", plural.Count(len(r.Violations), "violation"))
	for i, v := range r.Violations {
		if maxViolations > 0 && i >= maxViolations {
			fmt.Fprintf(w, "  … and %d more\n", len(r.Violations)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", v)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
