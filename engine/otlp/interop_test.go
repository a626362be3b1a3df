package otlp

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/trace"
)

// interopDir holds the repository's own recordings of JavaScript agent
// frameworks (../../interop/README.md): each framework's OpenTelemetry, as
// the OpenTelemetry JS SDK serialised it, of the article's window and of
// two controls, with the outbox each run wrote.
const interopDir = "../../interop/recordings"

// interopFrameworks are the recorders' names: interop/record-*.mjs (the
// Vercel AI SDK's two telemetry integrations are recorded apart).
var interopFrameworks = []string{"vercel-otel", "vercel-legacy", "langgraph", "mastra", "openai-agents"}

// interopScenarios are what each framework was recorded doing: the window
// (the first send takes effect and times out, the same send succeeds),
// control A (two different emails) and control B (the same email twice,
// both succeeding), with the grade the audit must give.
var interopScenarios = []struct {
	name  string
	to    []string
	grade audit.Grade
}{
	{"dup", []string{"ana@example.com", "ana@example.com"}, audit.Possible},
	{"different", []string{"ana@example.com", "bob@example.com"}, ""},
	{"twice", []string{"ana@example.com", "ana@example.com"}, audit.Duplicate},
}

// outboxLine is one line the recorder's send_invoice_email appended.
var outboxLine = regexp.MustCompile(`^\S+\tsend #(\d+)\tto=(\S+)\tsubject=(.+)$`)

// outbox is what a recording's run really sent: the recipients, in order,
// and the subject of each.
func outbox(t *testing.T, path string) (to []string, subjects []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		m := outboxLine.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != fmt.Sprint(n) {
			t.Fatalf("%s: line %d %q is not send #%d", path, n, sc.Text(), n)
		}
		to, subjects = append(to, m[2]), append(subjects, m[3])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return to, subjects
}

// Each recording, imported into a database of its own as 'retrylab
// import' does, is one execution whose sends are the ones its outbox
// holds, with their arguments: the window is graded POSSIBLE, two
// different emails nothing, the same email sent twice successfully a
// DUPLICATE, and the execution's duplicate flag agrees with the audit.
func TestInteropRecordingsGraded(t *testing.T) {
	opts := audit.Options{Effects: mustEffects(t)}
	for _, fw := range interopFrameworks {
		for _, sc := range interopScenarios {
			name := fw + "-" + sc.name
			t.Run(name, func(t *testing.T) {
				to, subjects := outbox(t, filepath.Join(interopDir, name+".outbox.txt"))
				if strings.Join(to, " ") != strings.Join(sc.to, " ") {
					t.Fatalf("outbox sent to %v, the scenario sends to %v", to, sc.to)
				}
				var want []string
				for i := range to {
					want = append(want, emailArgs(to[i], subjects[i]))
				}

				db := openDB(t)
				if _, err := ImportFile(db, filepath.Join(interopDir, name+".otlp.json")); err != nil {
					t.Fatal(err)
				}
				xs := executions(t, db)
				if len(xs) != 1 {
					t.Fatalf("%d executions, want 1: %+v", len(xs), xs)
				}
				spans, err := LoadSpans(db, xs[0].ID)
				if err != nil {
					t.Fatal(err)
				}
				tr := trace.Fold(xs[0].ID, Events(spans))
				if len(tr.Anomalies) > 0 {
					t.Errorf("anomalies %+v", tr.Anomalies)
				}
				if got := sends(tr); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("sends %s, the outbox says %s", strings.Join(got, " "), strings.Join(want, " "))
				}
				rep := audit.Run([]*trace.Trace{tr}, opts)
				switch {
				case sc.grade == "" && len(rep.Findings) > 0:
					t.Errorf("findings %+v, want none", rep.Findings)
				case sc.grade != "" && (len(rep.Findings) != 1 || rep.Findings[0].Grade != sc.grade ||
					rep.Findings[0].Tool != "send_invoice_email" || len(rep.Findings[0].Attempts) != 2):
					t.Errorf("findings %+v, want one %s send_invoice_email of two attempts", rep.Findings, sc.grade)
				}
				if want := sc.grade == audit.Duplicate; xs[0].Duplicates != want {
					t.Errorf("the execution's duplicate flag %v, the audit says %v", xs[0].Duplicates, want)
				}
			})
		}
	}
}
