package audit

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
)

// gradePairs is grade as it was written first, one pair at a time: the
// reference the linear grade must agree with.
func gradePairs(cl []attempt) (Finding, bool) {
	best := Grade("")
	why := ""
	involved := map[int]bool{}
	whyJ := -1
	for j := 1; j < len(cl); j++ {
		bOK, bUnknown, bInFlight := cl[j].a.ok, cl[j].a.unknown, cl[j].a.inflight
		if !bOK && !bUnknown && !cl[j].a.Deduplicated && !bInFlight {
			continue
		}
		for i := 0; i < j; i++ {
			aOK, aUnknown := cl[i].a.ok, cl[i].a.unknown
			if !aOK && !aUnknown {
				continue
			}
			var g Grade
			var w string
			switch {
			case cl[j].a.Deduplicated || (cl[j].a.Key != "" && cl[j].a.Key == cl[i].a.Key):
				g, w = Absorbed, whyKey
			case aOK && bOK && (cl[i].a.delivered || cl[j].a.delivered):
				g, w = Duplicate, whyDelivered
			case aOK && bOK:
				g, w = Duplicate, whyTwoOK
			case aUnknown:
				g, w = Possible, whyUnknown
			case aOK && bInFlight:
				g, w = Possible, whyOKThenInFlight
			default:
				continue
			}
			if g == Absorbed && cl[j].a.Key != "" {
				w += " (" + cl[j].a.Key + ")"
			}
			involved[i], involved[j] = true, true
			if g.rank() > best.rank() {
				best, why, whyJ = g, w, j
			}
		}
	}
	if best == "" {
		return Finding{}, false
	}
	if why == whyTwoOK {
		why = succeededWords(cl) // the words, not the grade: the same count
	}
	if cl[whyJ].a.inflight {
		why += inFlightWords
	}
	f := Finding{Grade: best, Tool: cl[0].a.Tool, Args: json.RawMessage(cl[0].args), Why: why}
	if len(f.Args) == 0 {
		f.Args = json.RawMessage("null")
	}
	for i, x := range cl {
		if involved[i] {
			m := x.a.Mark
			f.Attempts = append(f.Attempts, Evidence{Execution: x.exec, Call: x.a.Call, Attempt: x.a.N, Ref: x.a.Ref,
				Started: x.a.Started, Outcome: m.Word(), Mark: m.Glyph(), Key: x.a.Key, Error: x.a.Error})
		}
	}
	return f, true
}

// TestGradeAgreesWithEveryPair grades random clusters (outcomes, keys,
// deduplication, ◆, attempts in flight) both ways: the same finding, reason and evidence.
func TestGradeAgreesWithEveryPair(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	keys := []string{"", "", "k1", "k2", "k3"}
	for n := range 20000 {
		cl := make([]attempt, 1+r.Intn(9))
		for i := range cl {
			s := seen{Call: "c" + strconv.Itoa(r.Intn(3)), Tool: "send_email", Ref: fmt.Sprintf("r%d", i), N: i + 1,
				Key: keys[r.Intn(len(keys))], Started: t0.Add(time.Duration(i) * time.Second)}
			switch r.Intn(7) {
			case 0: // failed
			case 1:
				s.ok = true
			case 2:
				s.ok, s.delivered = true, true
			case 3:
				s.unknown = true
			case 4:
				s.Deduplicated = true
			case 5:
				s.Deduplicated, s.unknown = true, true
			case 6: // started, no answer yet
				s.inflight = true
			}
			cl[i] = attempt{exec: "x", args: `{"to":"a"}`, a: s}
		}
		want, wantOK := gradePairs(cl)
		got, gotOK := grade(cl, true)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("cluster %d %+v:\ngot  %v %+v\nwant %v %+v", n, cl, gotOK, got, wantOK, want)
		}
		if short, ok := grade(cl, false); ok != wantOK || short.Grade != want.Grade || short.Why != want.Why {
			t.Fatalf("cluster %d without evidence: %v %+v, want %v %s %q", n, ok, short, wantOK, want.Grade, want.Why)
		}
	}
}

// TestOneCallRetriedManyTimes: a call retried 100 000 times is one
// cluster; grading it visits each attempt a bounded number of times, so
// it finishes (one pair at a time it would take 5 billion comparisons).
func TestOneCallRetriedManyTimes(t *testing.T) {
	const n = 100_000
	cl := make([]attempt, n)
	for i := range cl {
		cl[i] = attempt{exec: "x", args: `{}`, a: seen{Call: "c1", Tool: "send_email", N: i + 1, Key: "k",
			Started: t0.Add(time.Duration(i) * time.Millisecond), ok: i%2 == 0, unknown: i%2 == 1, Mark: trace.Mark(0)}}
	}
	f, ok := grade(cl, true)
	if !ok || f.Grade != Absorbed || len(f.Attempts) != n {
		t.Fatalf("%v %s %d attempts", ok, f.Grade, len(f.Attempts))
	}
}

// Verdict (and VerdictCanonical, for arguments already canonical) say
// what the report's counts say: duplicate when it counts one, else
// possible when it counts one, else nothing.
func TestVerdictIsTheReportsCounts(t *testing.T) {
	const args = `{"subject": "hi", "to": "a@x"}` // canonical already
	for _, atts := range [][]att{
		{{"c1", "send_email", args, 0, trace.OutcomeOK, "", false}, {"c2", "send_email", args, 5, trace.OutcomeOK, "", false}},
		{{"c1", "send_email", args, 0, trace.OutcomeTimeout, "", false}, {"c1", "send_email", args, 3, trace.OutcomeOK, "", false}},
		{{"c1", "send_email", args, 0, trace.OutcomeOK, "k1", false}, {"c1", "send_email", args, 3, trace.OutcomeOK, "k1", false}},
		{{"c1", "send_email", args, 0, trace.OutcomeOK, "", false}, {"c2", "get_email", args, 3, trace.OutcomeOK, "", false}},
		{{"c1", "send_email", args, 0, trace.OutcomeTimeout, "", false}, {"c2", "send_email", args, 1, trace.OutcomeOK, "", false},
			{"c3", "send_email", args, 2, trace.OutcomeOK, "", false}},
		{{"c1", "send_email", args, 0, trace.OutcomeError, "", false}, {"c1", "send_email", args, 3, trace.OutcomeOK, "", false}},
	} {
		tr := build("x", atts...)
		counts := Run([]*trace.Trace{tr}, opts()).Counts
		want := Grade("")
		switch {
		case counts.Duplicate > 0:
			want = Duplicate
		case counts.Possible > 0:
			want = Possible
		}
		if Verdict(tr) != want || VerdictCanonical(tr) != want {
			t.Errorf("%+v: Verdict %q, VerdictCanonical %q, the report %+v", atts, Verdict(tr), VerdictCanonical(tr), counts)
		}
	}
}

// TestSucceededTwiceIsTheDuplicateGrade grades random clusters of one
// execution (outcomes, keys, deduplication, ◆, in every order) and checks
// that SucceededTwice, given only the keys of the attempts that succeeded,
// says duplicate exactly when grade does.
func TestSucceededTwiceIsTheDuplicateGrade(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	keys := []string{"", "", "k1", "k1", "k2", "k3"}
	dups := 0
	for range 50000 {
		cl := make([]attempt, 1+r.Intn(8))
		var ok []string
		for i := range cl {
			s := seen{Call: "c" + strconv.Itoa(r.Intn(3)), Tool: "send_email", N: i + 1, Key: keys[r.Intn(len(keys))],
				Started: t0.Add(time.Duration(r.Intn(4)) * time.Second)}
			switch r.Intn(6) {
			case 0:
				s.ok = true
			case 1:
				s.unknown = true
			case 2:
				s.Deduplicated = true
			case 3:
				s.ok, s.delivered = true, true
			case 4:
				s.inflight = true
			}
			cl[i] = attempt{exec: "x", args: `{"to":"a"}`, a: s}
			if s.ok {
				ok = append(ok, s.Key)
			}
		}
		f, found := grade(cl, false)
		want := found && f.Grade == Duplicate
		if got := SucceededTwice(ok); got != want {
			t.Fatalf("cluster %+v: SucceededTwice(%q) = %v, grade says %v (%v)", cl, ok, got, f.Grade, found)
		}
		if want {
			dups++
		}
	}
	if dups < 1000 {
		t.Fatalf("only %d duplicates among the clusters: the test grades too few", dups)
	}
	if SucceededTwice(nil) || SucceededTwice([]string{""}) || SucceededTwice([]string{"k", "k"}) || !SucceededTwice([]string{"k", ""}) {
		t.Fatal("SucceededTwice is wrong on the plain cases")
	}
}
