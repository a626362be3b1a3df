package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/internal/jsonstream"
)

// Report.JSON writes what an indented encoding/json encoder without HTML
// escaping writes, byte for byte: with no findings, with findings whose
// arguments and words need escaping, and with no effects at all.
func TestReportJSONAsTheEncoder(t *testing.T) {
	if n := reflect.TypeOf(Report{}).NumField(); n != 5 {
		t.Fatalf("Report has %d fields; Report.JSON writes 5: write the new one there too", n)
	}
	none := Run(nil, Options{}) // no effects, no findings
	dup := Run(nil, Options{Effects: []string{"send_*", "<charge>&"}})
	full := Run(nil, Options{Effects: []string{"send_*"}})
	full.Executions, full.Attempts = 2, 4
	full.Findings = []Finding{
		{Grade: Duplicate, Tool: "send_email", Args: json.RawMessage(`{"to":"a<b>&c@example.com","body":"é\u2028"}`),
			Why: "two attempts \"succeeded\"", Attempts: []Evidence{
				{Execution: "exec_1", Call: "c1", Attempt: 1, Ref: "span1", Started: t0, Outcome: "ok", Mark: "✓", Key: "k<1>"},
				{Execution: "exec_2", Call: "c2", Attempt: 2, Ref: "span2", Started: t0, Outcome: "timeout", Mark: "◆", Error: "deadline & more"}}},
		{Grade: Possible, Tool: "charge", Args: json.RawMessage(`null`), Why: "unknown", Attempts: []Evidence{}},
	}
	full.Counts = Counts{Duplicate: 1, Possible: 1}
	for name, r := range map[string]Report{"no effects": none, "no findings": dup, "findings": full} {
		var want bytes.Buffer
		if err := jsonstream.Write(&want, r); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := r.JSON(&got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: Report.JSON wrote\n%s\nwant (encoding/json)\n%s", name, got.String(), want.String())
		}
	}
}

// A listing read from a host that goes away mid-way: each rendering
// writes what came, then returns the error; Collect returns it too.
func TestListingEndsWithTheSourcesError(t *testing.T) {
	head := Report{Effects: []string{"send_*"}, Executions: 2, Attempts: 3, Counts: Counts{Duplicate: 2}}
	f := Finding{Grade: Duplicate, Tool: "send_email", Args: json.RawMessage(`{"to":"a"}`), Why: "two attempts succeeded",
		Attempts: []Evidence{{Execution: "exec_1", Call: "c1", Attempt: 1, Ref: "s1", Started: t0, Outcome: "ok", Mark: "✓"}}}
	gone := errors.New("the host went away")
	listing := func() *Listing {
		n := 0
		return NewListing(head, func() (*Finding, error) {
			if n++; n == 1 {
				return &f, nil
			}
			return nil, gone
		}, nil)
	}
	for name, render := range map[string]func(*Listing, *bytes.Buffer) error{
		"text":     func(l *Listing, b *bytes.Buffer) error { return l.Text(b) },
		"markdown": func(l *Listing, b *bytes.Buffer) error { return l.Markdown(b) },
		"json":     func(l *Listing, b *bytes.Buffer) error { return l.JSON(b) },
	} {
		var out bytes.Buffer
		if err := render(listing(), &out); !errors.Is(err, gone) {
			t.Errorf("%s: %v, want the source's error", name, err)
		}
		if !strings.Contains(out.String(), "send_email") {
			t.Errorf("%s: the finding that came is not written:\n%s", name, out.String())
		}
	}
	if _, err := listing().Collect(); !errors.Is(err, gone) {
		t.Errorf("Collect: %v, want the source's error", err)
	}
}
