package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
)

var t0 = time.Date(2026, 9, 28, 14, 50, 0, 0, time.UTC)

// attempt describes one attempt for the builder: its call, tool, args,
// start (seconds after t0), outcome, key and dedup flag.
type att struct {
	call, tool, args string
	at               int
	outcome          trace.Outcome
	key              string
	dedup            bool
}

func build(exec string, atts ...att) *trace.Trace {
	evs := []trace.Event{{Kind: trace.ExecutionStarted, Time: t0}, {Kind: trace.RunStarted, Run: 1, Time: t0}}
	n := map[string]int{}
	for _, a := range atts {
		tm := t0.Add(time.Duration(a.at) * time.Second)
		if n[a.call] == 0 {
			evs = append(evs, trace.Event{Kind: trace.CallScheduled, Run: 1, Call: a.call, Tool: a.tool, Args: json.RawMessage(a.args), Time: tm})
		}
		n[a.call]++
		evs = append(evs,
			trace.Event{Kind: trace.AttemptStarted, Run: 1, Call: a.call, Attempt: n[a.call], Key: a.key, Ref: a.call + "-" + string(rune('0'+n[a.call])), Time: tm},
			trace.Event{Kind: trace.AttemptFinished, Run: 1, Call: a.call, Attempt: n[a.call], Outcome: a.outcome, Deduplicated: a.dedup, Time: tm.Add(time.Second)})
	}
	return trace.Fold(exec, evs)
}

func opts() Options {
	p, _ := ParseEffects(DefaultEffects)
	return Options{Effects: p}
}

func TestGrades(t *testing.T) {
	const args = `{"to": "a@x", "subject": "hi"}`
	const reordered = `{"subject":"hi","to":"a@x"}`
	cases := []struct {
		name  string
		atts  []att
		grade Grade
		refs  string
	}{
		{"two successes under new call ids, args reordered", []att{
			{"c1", "send_email", args, 0, trace.OutcomeOK, "", false},
			{"c2", "send_email", reordered, 5, trace.OutcomeOK, "", false}}, Duplicate, "c1-1 c2-1"},
		{"a timeout then a success", []att{
			{"c1", "send_email", args, 0, trace.OutcomeTimeout, "", false},
			{"c1", "send_email", args, 3, trace.OutcomeOK, "", false}}, Possible, "c1-1 c1-2"},
		{"a cancellation then a success", []att{
			{"c1", "charge_card", args, 0, trace.OutcomeCancelled, "", false},
			{"c2", "charge_card", args, 3, trace.OutcomeOK, "", false}}, Possible, "c1-1 c2-1"},
		{"the same key on the repeat", []att{
			{"c1", "send_email", args, 0, trace.OutcomeOK, "k1", false},
			{"c1", "send_email", args, 3, trace.OutcomeOK, "k1", false}}, Absorbed, "c1-1 c1-2"},
		{"answered from the key store", []att{
			{"c1", "send_email", args, 0, trace.OutcomeTimeout, "", false},
			{"c1", "send_email", args, 3, trace.OutcomeOK, "", true}}, Absorbed, "c1-1 c1-2"},
		{"an error then a success: the error may have come after the effect", []att{
			{"c1", "send_email", args, 0, trace.OutcomeError, "", false},
			{"c1", "send_email", args, 3, trace.OutcomeOK, "", false}}, Possible, "c1-1 c1-2"},
		{"an error then a success under a new call id", []att{
			{"c1", "send_email", args, 0, trace.OutcomeError, "", false},
			{"c2", "send_email", reordered, 3, trace.OutcomeOK, "", false}}, Possible, "c1-1 c2-1"},
		{"a rejection then a success: refused before acting", []att{
			{"c1", "send_email", args, 0, trace.OutcomeRejected, "", false},
			{"c1", "send_email", args, 3, trace.OutcomeOK, "", false}}, "", ""},
		{"a mismatch then a success", []att{
			{"c1", "send_email", args, 0, trace.OutcomeMismatch, "", false},
			{"c1", "send_email", args, 3, trace.OutcomeOK, "", false}}, "", ""},
		{"unknown arguments: two calls are two effects", []att{
			{"c1", "send_email", "", 0, trace.OutcomeOK, "", false},
			{"c2", "send_email", "", 3, trace.OutcomeOK, "", false}}, "", ""},
		{"unknown arguments (null): two calls are two effects", []att{
			{"c1", "send_email", "null", 0, trace.OutcomeTimeout, "", false},
			{"c2", "send_email", "null", 3, trace.OutcomeOK, "", false}}, "", ""},
		{"unknown arguments: one call's attempts are one effect", []att{
			{"c1", "send_email", "", 0, trace.OutcomeOK, "", false},
			{"c1", "send_email", "", 3, trace.OutcomeOK, "", false}}, Duplicate, "c1-1 c1-2"},
		{"reads never count", []att{
			{"c1", "get_email", args, 0, trace.OutcomeOK, "", false},
			{"c2", "get_email", args, 3, trace.OutcomeOK, "", false}}, "", ""},
		{"other arguments are another effect", []att{
			{"c1", "send_email", args, 0, trace.OutcomeOK, "", false},
			{"c2", "send_email", `{"to": "b@x", "subject": "hi"}`, 3, trace.OutcomeOK, "", false}}, "", ""},
		{"a tool no pattern names", []att{
			{"c1", "summarise", args, 0, trace.OutcomeOK, "", false},
			{"c2", "summarise", args, 3, trace.OutcomeOK, "", false}}, "", ""},
		{"duplicate outranks possible", []att{
			{"c1", "send_email", args, 0, trace.OutcomeTimeout, "", false},
			{"c2", "send_email", args, 3, trace.OutcomeOK, "", false},
			{"c3", "send_email", args, 6, trace.OutcomeOK, "", false}}, Duplicate, "c1-1 c2-1 c3-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := Run([]*trace.Trace{build("x", c.atts...)}, opts())
			if c.grade == "" {
				if len(rep.Findings) != 0 {
					t.Fatalf("findings %+v", rep.Findings)
				}
				return
			}
			if len(rep.Findings) != 1 {
				t.Fatalf("findings %+v", rep.Findings)
			}
			f := rep.Findings[0]
			var refs []string
			for _, e := range f.Attempts {
				refs = append(refs, e.Ref)
			}
			if f.Grade != c.grade || strings.Join(refs, " ") != c.refs {
				t.Errorf("%s %v, want %s %s", f.Grade, refs, c.grade, c.refs)
			}
		})
	}
}

func TestAcrossExecutionsWithinTheWindow(t *testing.T) {
	a := build("a", att{"c1", "send_email", `{"to":"a"}`, 0, trace.OutcomeOK, "", false})
	b := build("b", att{"c9", "send_email", `{"to":"a"}`, 60, trace.OutcomeOK, "", false})
	rep := Run([]*trace.Trace{a, b}, opts())
	if rep.Counts.Duplicate != 1 || rep.Findings[0].Attempts[1].Execution != "b" {
		t.Fatalf("%+v", rep)
	}
	o := opts()
	o.Window = 30 * time.Second
	if rep := Run([]*trace.Trace{a, b}, o); len(rep.Findings) != 0 {
		t.Fatalf("outside the window: %+v", rep.Findings)
	}
}

func TestParseEffects(t *testing.T) {
	if _, err := ParseEffects("send_*,[bad"); err == nil {
		t.Error("a bad pattern passed")
	}
	if _, err := ParseEffects(" , "); err == nil {
		t.Error("no patterns passed")
	}
	p, err := ParseEffects("Send_*, refund")
	if err != nil || !(Options{Effects: p}).SideEffecting("SEND_SMS") || !(Options{Effects: p}).SideEffecting("refund") {
		t.Errorf("%v %v", p, err)
	}
}

func TestRenderings(t *testing.T) {
	rep := Run([]*trace.Trace{build("x",
		att{"c1", "send_email", `{"to":"a|b"}`, 0, trace.OutcomeOK, "", false},
		att{"c2", "send_email", `{"to":"a|b"}`, 5, trace.OutcomeOK, "", false})}, opts())
	var text, md bytes.Buffer
	rep.Text(&text)
	rep.Markdown(&md)
	for _, want := range []string{"DUPLICATE send_email {\"to\": \"a|b\"}", "✓ ok  2026-09-28T14:50:00.000000Z  x  call c1 attempt 1  ref c1-1", "1 duplicate, 0 possible, 0 absorbed"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"## 1. duplicate: `send_email`", "| ✓ ok | 2026-09-28T14:50:05.000000Z | `x` | `c2` | 1 | `c2-1` |  |", "`{\"to\": \"a\\|b\"}`"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// Temporal activity types are CamelCase: the patterns reach them in snake
// case, and so do the read prefixes.
func TestSideEffectingCamelCase(t *testing.T) {
	o := Options{Effects: []string{"send_*", "charge_*"}}
	for tool, want := range map[string]bool{
		"SendConfirmation": true, "sendEmail": true, "ChargeCard": true, "send_email": true,
		"GetSendStatus": false, "ReserveStock": false, "SendableThing": false, "HTTPSendX": false,
	} {
		if got := o.SideEffecting(tool); got != want {
			t.Errorf("%s: %v, want %v (snake %q)", tool, got, want, snakeCase(tool))
		}
	}
	if s := snakeCase("HTTPCallTwice2Go"); s != "http_call_twice2_go" {
		t.Errorf("snake %q", s)
	}
}
