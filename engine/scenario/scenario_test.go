package scenario_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
)

// minimal is a valid scenario; the error tests break one thing in it.
const minimal = `name: minimal
tools:
  send: {service: mail, op: send, kind: keyed}
turns:
  - text: "Sending"
    calls:
      - step: s1
        tool: send
        args: {to: a@b.c, subject: x}
`

// parseErr parses data as file and returns the error, which must be a
// one-line *scenario.Error.
func parseErr(t *testing.T, file, data string) *scenario.Error {
	t.Helper()
	s, err := scenario.Parse(file, []byte(data))
	if err == nil {
		t.Fatalf("parsed %+v, want an error", s)
	}
	var se *scenario.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v, want *scenario.Error", err, err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	if se.File != file {
		t.Errorf("error names file %q, want %q", se.File, file)
	}
	return se
}

func TestMinimalParses(t *testing.T) {
	s, err := scenario.Parse("minimal.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "minimal" || s.Source != "minimal.yaml" || len(s.Turns) != 1 || s.Turns[0].Calls[0].Step != "s1" {
		t.Fatalf("parsed %+v", s)
	}
	if got := s.Turns[0].Calls[0].ArgOrder; strings.Join(got, ",") != "to,subject" {
		t.Errorf("argument order %v, want as written", got)
	}
	p := s.Policy
	if p.KeyDigits != 8 || p.KeyFrom != scenario.KeyFromIntent || !p.CanonicalArgs() || p.Retention.D() != 24*time.Hour {
		t.Errorf("policy defaults %+v", p)
	}
	if r := p.Retry; r.Initial <= 0 || r.Backoff != 2 || r.MaxInterval != 100*r.Initial || r.Timeout <= 0 {
		t.Errorf("retry defaults %+v: want backoff 2, a maximum interval of 100 x the initial one, a timeout", r)
	}
	if !s.Tools["send"].Deduplicates() {
		t.Errorf("dedupe should default to on")
	}
}

func TestParseErrorBadYAML(t *testing.T) {
	se := parseErr(t, "bad.yaml", "name: bad\ntools: [\n  - x: y\n  z\n")
	if se.Line < 2 || se.Line > 4 || se.Field != "" {
		t.Errorf("bad YAML: %+v", se)
	}
	if !strings.HasPrefix(se.Error(), "bad.yaml:") || strings.Contains(se.Error(), "yaml: ") {
		t.Errorf("bad YAML error %q: want file:line: message without the library's prefix", se)
	}
}

func TestParseErrorUnknownTool(t *testing.T) {
	data := strings.Replace(minimal, "tool: send", "tool: sned", 1)
	se := parseErr(t, "tool.yaml", data)
	want := `tool.yaml:8: turns.0.calls.0.tool: unknown tool "sned" (valid: send)`
	if se.Error() != want {
		t.Errorf("got  %q\nwant %q", se, want)
	}
}

func TestParseErrorUnknownFaultPoint(t *testing.T) {
	se := parseErr(t, "fault.yaml", minimal+"faults:\n  - {step: s1, point: crash-sometime}\n")
	want := `fault.yaml:11: faults.0.point: unknown fault point "crash-sometime" (valid: crash-after-effect, crash-after-record, crash-before-call, server-error, slow-response, timeout-after-effect, timeout-before-effect)`
	if se.Error() != want {
		t.Errorf("got  %q\nwant %q", se, want)
	}
}

func TestParseErrorMissingName(t *testing.T) {
	data := strings.Replace(minimal, "name: minimal\n", "title: no name\n", 1)
	se := parseErr(t, "noname.yaml", data)
	want := "noname.yaml:1: name: missing (every scenario needs a name)"
	if se.Error() != want {
		t.Errorf("got  %q\nwant %q", se, want)
	}
}

func TestParseErrorUnknownField(t *testing.T) {
	se := parseErr(t, "field.yaml", minimal+"colour: red\n")
	// The line of the stray field, the field's name and the valid ones.
	if se.Line != 10 {
		t.Errorf("line %d, want 10: %q", se.Line, se)
	}
	for _, want := range []string{"field.yaml:10: ", "colour", "valid: name, title"} {
		if !strings.Contains(se.Error(), want) {
			t.Errorf("%q lacks %q", se, want)
		}
	}
	nested := strings.Replace(minimal, "kind: keyed}", "kind: keyed, dedup: false}", 1)
	se = parseErr(t, "nested.yaml", nested)
	for _, want := range []string{"nested.yaml:3: ", "dedup", "dedupe"} {
		if !strings.Contains(se.Error(), want) {
			t.Errorf("%q lacks %q", se, want)
		}
	}
}

func TestParseErrorNotUTF8(t *testing.T) {
	se := parseErr(t, "latin1.yaml", "name: latin1\ntitle: \"caf\xe9\"\n")
	if want := "latin1.yaml:2: file is not UTF-8 text"; se.Error() != want {
		t.Errorf("got  %q\nwant %q", se, want)
	}
}

func TestParseErrorOthers(t *testing.T) {
	for _, tt := range []struct{ name, data, want string }{
		{"empty", "", "empty.yaml:1: file is empty"},
		{"bad name", strings.Replace(minimal, "name: minimal", "name: Bad Name", 1),
			`bad name.yaml:1: name: "Bad Name" is not a valid name (lower-case letters, digits, - and _)`},
		{"duplicate step", strings.Replace(minimal, "        args: {to: a@b.c, subject: x}\n",
			"      - step: s1\n        tool: send\n", 1),
			`duplicate step.yaml:9: turns.0.calls.1.step: step id "s1" is used twice`},
		{"bad duration", minimal + "policy: {retry: {timeout: soon}}\n", `invalid duration "soon"`},
		{"fault on unknown step", minimal + "faults:\n  - {step: s9, point: crash-before-call}\n",
			`fault on unknown step.yaml:11: faults.0.step: no call has step id "s9"`},
	} {
		se := parseErr(t, tt.name+".yaml", tt.data)
		if !strings.Contains(se.Error(), tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, se, tt.want)
		}
	}
	big := minimal + "teaches: \"" + strings.Repeat("x", scenario.MaxFileSize) + "\"\n"
	if _, err := scenario.Parse("big.yaml", []byte(big)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("oversized file: %v", err)
	}
}

func TestRetryDelay(t *testing.T) {
	r := scenario.Retry{Initial: scenario.Duration(time.Second), Backoff: 2, MaxInterval: scenario.Duration(100 * time.Second)}
	for n, want := range map[int]time.Duration{
		1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 7: 64 * time.Second,
		8: 100 * time.Second, 9: 100 * time.Second, 1000: 100 * time.Second,
	} {
		if got := r.Delay(n); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
	r.Backoff = 1.5
	for n, want := range map[int]time.Duration{1: time.Second, 2: 1500 * time.Millisecond, 3: 2250 * time.Millisecond} {
		if got := r.Delay(n); got != want {
			t.Errorf("backoff 1.5: Delay(%d) = %v, want %v", n, got, want)
		}
	}
	constant := scenario.Retry{Initial: scenario.Duration(50 * time.Millisecond), Backoff: 1, MaxInterval: scenario.Duration(time.Second)}
	if got := constant.Delay(40); got != 50*time.Millisecond {
		t.Errorf("backoff 1: Delay(40) = %v", got)
	}
	small := scenario.Retry{Initial: scenario.Duration(time.Second), Backoff: 3, MaxInterval: scenario.Duration(2 * time.Second)}
	if got := small.Delay(2); got != 2*time.Second {
		t.Errorf("capped: Delay(2) = %v, want the 2s maximum", got)
	}
	// The maximum interval defaults to 100 x the initial one, as Temporal's.
	s, err := scenario.Parse("r.yaml", []byte(minimal+"policy: {retry: {initial: 1s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Policy.Retry.MaxInterval.D(); got != 100*time.Second {
		t.Errorf("default max interval %v, want 100s", got)
	}
	if got := s.Policy.Retry.Delay(20); got != 100*time.Second {
		t.Errorf("Delay(20) = %v, want the 100s maximum", got)
	}
}

func TestCatalogLookup(t *testing.T) {
	c := scenario.NewCatalog(fixtures.FS)
	all, err := c.All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
	}
	// The article's four come first, in lesson order.
	if len(names) < 4 || strings.Join(names[:4], ",") != "naive,crash,safe,invoice-crm" {
		t.Errorf("catalogue order %v", names)
	}
	safe, err := c.Get("safe")
	if err != nil || safe.Execution != "exec_01H8" || !safe.Policy.Keys || !safe.Policy.Journal {
		t.Fatalf("safe: %+v (%v)", safe, err)
	}
	_, err = c.Get("nope")
	if !errors.Is(err, scenario.ErrUnknown) || !strings.Contains(err.Error(), "known: ") || !strings.Contains(err.Error(), "naive") {
		t.Errorf("unknown scenario: %v", err)
	}

	// A file named for one scenario must hold that one.
	odd := scenario.NewCatalog(fstest.MapFS{"other.yaml": {Data: []byte(minimal)}})
	if _, err := odd.Get("other"); err == nil || !strings.Contains(err.Error(), `name is "minimal"`) {
		t.Errorf("misnamed file: %v", err)
	}
	if s, err := odd.Get("minimal"); err != nil || s.Name != "minimal" {
		t.Errorf("lookup by name inside a misnamed file: %v", err)
	}
}
