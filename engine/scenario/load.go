package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/retrylab/retrylab/engine/fault"
)

// MaxFileSize bounds a scenario file.
const MaxFileSize = 1 << 20

// Error is a problem in a scenario file, with its position and field.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Parse reads one scenario from YAML. file names it in errors.
func Parse(file string, data []byte) (scn *Scenario, err error) {
	// yaml.v3 panics on some malformed documents (a merge key that is not a
	// scalar, for one): a bad file must be an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			msg := strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(fmt.Sprint(r))
			scn, err = nil, &Error{File: file, Msg: "the YAML reader cannot handle this document (" + msg + ")"}
		}
	}()
	if len(data) > MaxFileSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("file is %d bytes; a scenario is at most %d", len(data), MaxFileSize)}
	}
	if !utf8.Valid(data) {
		line := 1 + bytes.Count(data[:invalidUTF8At(data)], []byte("\n"))
		return nil, &Error{File: file, Line: line, Msg: "file is not UTF-8 text"}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, tabError(data, yamlError(file, err))
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: file, Line: 1, Msg: "file is empty"}
	}
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return nil, withField(yamlError(file, err), root.Content[0])
	}
	s.Source = file
	doc := root.Content[0]
	if err := explicitZeros(doc); err != nil {
		var fe *fieldError
		errors.As(err, &fe)
		return nil, &Error{File: file, Line: lineOf(doc, fe.path), Field: strings.Join(fe.path, "."), Msg: fe.msg}
	}
	for ti := range s.Turns {
		for ci := range s.Turns[ti].Calls {
			if n := find(doc, "turns", strconv.Itoa(ti), "calls", strconv.Itoa(ci), "args"); n != nil && n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					s.Turns[ti].Calls[ci].ArgOrder = append(s.Turns[ti].Calls[ci].ArgOrder, n.Content[i].Value)
				}
			}
		}
	}
	s.applyDefaults()
	if err := s.validate(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return nil, &Error{File: file, Line: lineOf(doc, fe.path), Field: strings.Join(fe.path, "."), Msg: fe.msg}
		}
		return nil, &Error{File: file, Msg: err.Error()}
	}
	return &s, nil
}

// Load reads a scenario file from fsys.
func Load(fsys fs.FS, name string) (*Scenario, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	return Parse(name, data)
}

func invalidUTF8At(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(data)
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns a yaml.v3 error into one line with the file and line.
func yamlError(file string, err error) error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	// A quoted value may span lines; the error must stay on one.
	msg = strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(msg)
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: friendlyYAML(m[2])}
	}
	return &Error{File: file, Msg: friendlyYAML(msg)}
}

// tabError rewords an error YAML gives for a tab, which YAML does not allow
// in indentation, and gives it the tab's line when YAML gave none.
func tabError(data []byte, err error) error {
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "cannot start any token") && !strings.Contains(e.Msg, "tab character") {
		return err
	}
	lines := strings.Split(string(data), "\n")
	at := func(line int) bool { return line >= 1 && line <= len(lines) && strings.Contains(lines[line-1], "\t") }
	// Without a line, or when YAML names the tab but counts from the line
	// before, the tab is on the first line from there that has one.
	if !at(e.Line) && (e.Line == 0 || strings.Contains(e.Msg, "tab character")) {
		for i := max(e.Line, 1); i <= len(lines); i++ {
			if at(i) {
				e.Line = i
				break
			}
		}
	}
	if at(e.Line) {
		e.Msg = "a tab character: YAML indents with spaces, never tabs (replace the tab with spaces)"
	}
	return e
}

// explicitZeros refuses a zero written for a setting whose zero means "the
// default": written out, it would silently become the default instead.
func explicitZeros(doc *yaml.Node) error {
	for _, z := range []struct {
		path []string
		def  string
	}{
		{[]string{"policy", "retry", "timeout"}, "1s"},
		{[]string{"policy", "retry", "initial"}, "50ms"},
		{[]string{"policy", "retry", "max_interval"}, "100 × initial"},
		{[]string{"policy", "retry", "backoff"}, "2"},
		{[]string{"policy", "retention"}, "24h"},
		{[]string{"policy", "key_digits"}, "8"},
	} {
		n := find(doc, z.path...)
		if n == nil || n.Kind != yaml.ScalarNode {
			continue
		}
		if d, err := time.ParseDuration(n.Value); (err == nil && d == 0) || n.Value == "0" {
			return fieldErr(fmt.Sprintf("%s is not allowed: it must be more than 0 (leave it out for the default, %s)", n.Value, z.def), z.path...)
		}
	}
	return nil
}

// unknownField matches yaml.v3's unknown-field error after friendlyYAML.
var unknownField = regexp.MustCompile(`^field (\S+) not found in \w+(.*)$`)

// withField names the field a decoding error is about: an unknown field
// by its own name, any other error by the key on its line.
func withField(err error, doc *yaml.Node) error {
	var e *Error
	if !errors.As(err, &e) || e.Field != "" || e.Line == 0 {
		return err
	}
	if m := unknownField.FindStringSubmatch(e.Msg); m != nil {
		path := fieldAt(doc, e.Line, nil)
		if len(path) > 0 {
			path = path[:len(path)-1]
		}
		e.Field = strings.Join(append(path, m[1]), ".")
		e.Msg = "unknown field" + m[2]
		return e
	}
	if path := fieldAt(doc, e.Line, nil); len(path) > 0 {
		e.Field = strings.Join(path, ".")
	}
	// Several keys on one line (an inline map such as retry: {initial: x,
	// backoff: y}): the key whose value the error quotes is the one.
	if m := quotedValue.FindStringSubmatch(e.Msg); m != nil {
		v := m[1] + m[2]
		if path := keyWithValue(doc, e.Line, v, nil); len(path) > 0 {
			e.Field = strings.Join(path, ".")
		}
	}
	return e
}

// quotedValue finds the value an error message quotes: `two` or "fifty".
var quotedValue = regexp.MustCompile("`([^`]*)`|\"([^\"]*)\"")

// keyWithValue is the path of a mapping key on line whose scalar value is v.
func keyWithValue(n *yaml.Node, line int, v string, path []string) []string {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			p := append(append([]string{}, path...), k.Value)
			if val.Kind == yaml.ScalarNode && val.Line == line && val.Value == v {
				return p
			}
			if found := keyWithValue(val, line, v, p); found != nil {
				return found
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if found := keyWithValue(c, line, v, append(append([]string{}, path...), strconv.Itoa(i))); found != nil {
				return found
			}
		}
	}
	return nil
}

// fieldAt is the path of the deepest mapping key on a line.
func fieldAt(n *yaml.Node, line int, path []string) []string {
	var best []string
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := append(append([]string{}, path...), k.Value)
			if k.Line == line {
				best = p
			}
			if deeper := fieldAt(v, line, p); len(deeper) > len(best) {
				best = deeper
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if deeper := fieldAt(c, line, append(append([]string{}, path...), strconv.Itoa(i))); len(deeper) > len(best) {
				best = deeper
			}
		}
	}
	return best
}

var typeName = regexp.MustCompile(`in type scenario\.(\w+)`)

func friendlyYAML(msg string) string {
	msg = strings.ReplaceAll(msg, "!!", "")
	if m := typeName.FindStringSubmatch(msg); m != nil {
		if valid := fieldsOf(m[1]); valid != "" {
			msg = typeName.ReplaceAllString(msg, "in "+strings.ToLower(m[1])) + " (valid: " + valid + ")"
		}
	}
	return msg
}

// fieldsOf lists the YAML fields of a scenario type, for error messages.
func fieldsOf(typ string) string {
	fields := map[string]string{
		"Scenario":   "name, title, teaches, execution, policy, tools, turns, faults, narration, expect, order, fixes",
		"Policy":     "keys, journal, key_digits, key_from, canonical, retention, retry, journal_decisions",
		"Retry":      "initial, backoff, max_interval, max_attempts, timeout, non_retryable",
		"Tool":       "service, op, kind, dedupe",
		"Turn":       "text, calls",
		"Call":       "step, tool, args, agent_retry, concurrent",
		"AgentRetry": "text, fresh_step, max, reorder, args",
		"Fault":      "step, attempt, point",
		"Narration":  "intro, outro, predict",
		"Expect":     "script, outbox, crm_rows, crm_writes, status, mail_requests, executions, runs, attempts",
	}
	return fields[typ]
}

// find walks a YAML tree by mapping keys and sequence indexes.
func find(n *yaml.Node, path ...string) *yaml.Node {
	for _, p := range path {
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
					break
				}
			}
			if next == nil {
				return nil
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return n
}

// lineOf is the line of the deepest node on path that exists.
func lineOf(doc *yaml.Node, path []string) int {
	for i := len(path); i >= 0; i-- {
		if n := find(doc, path[:i]...); n != nil {
			return n.Line
		}
	}
	return 0
}

type fieldError struct {
	path []string
	msg  string
}

func (e *fieldError) Error() string { return strings.Join(e.path, ".") + ": " + e.msg }

func fieldErr(msg string, path ...string) error { return &fieldError{path: path, msg: msg} }

var (
	validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	validStep = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

func (s *Scenario) applyDefaults() {
	if s.Policy.KeyDigits == 0 {
		s.Policy.KeyDigits = 8
	}
	if s.Policy.KeyFrom == "" {
		s.Policy.KeyFrom = KeyFromIntent
	}
	if s.Policy.Retention == 0 {
		s.Policy.Retention = Duration(24 * 60 * 60 * 1e9)
	}
	r := &s.Policy.Retry
	if r.Initial == 0 {
		r.Initial = Duration(50e6)
	}
	if r.Backoff == 0 {
		r.Backoff = 2
	}
	if r.MaxInterval == 0 {
		r.MaxInterval = r.Initial * 100
	}
	if r.Timeout == 0 {
		r.Timeout = Duration(time.Second)
	}
	for ti := range s.Turns {
		for ci := range s.Turns[ti].Calls {
			if ar := s.Turns[ti].Calls[ci].AgentRetry; ar != nil && ar.Max == 0 {
				ar.Max = 1
			}
		}
	}
	if len(s.Expect.Script) == 0 {
		s.Expect.Script = []string{"run"}
	}
}

func oneOf[T ~string](v T, valid ...T) bool {
	for _, x := range valid {
		if v == x {
			return true
		}
	}
	return false
}

func list[T ~string](valid ...T) string {
	out := make([]string, len(valid))
	for i, v := range valid {
		out[i] = string(v)
	}
	return strings.Join(out, ", ")
}

var opsByService = map[string][]string{
	"mail": {"send"},
	"crm":  {"upsert", "create", "get"},
}

func (s *Scenario) validate() error {
	if s.Name == "" {
		return fieldErr("missing (every scenario needs a name)", "name")
	}
	if !validName.MatchString(s.Name) {
		return fieldErr(fmt.Sprintf("%q is not a valid name (lower-case letters, digits, - and _)", s.Name), "name")
	}
	if s.Order < 0 {
		return fieldErr("must be 0 (not in the lesson path) or more", "order")
	}
	if s.Fixes != "" && (!validName.MatchString(s.Fixes) || s.Fixes == s.Name) {
		return fieldErr(fmt.Sprintf("%q is not the name of another scenario", s.Fixes), "fixes")
	}
	if !oneOf(s.Policy.KeyFrom, KeyFromIntent, KeyFromAttempt, KeyFromTimestamp, KeyFromStep, KeyFromTemporal) {
		return fieldErr(fmt.Sprintf("unknown value %q (valid: %s)", s.Policy.KeyFrom, list(KeyFromIntent, KeyFromAttempt, KeyFromTimestamp, KeyFromStep, KeyFromTemporal)), "policy", "key_from")
	}
	if s.Policy.JournalDecisions && !s.Policy.Journal {
		return fieldErr("needs journal: true (decisions are written to the journal)", "policy", "journal_decisions")
	}
	if d := s.Policy.KeyDigits; d < 4 || d > 64 {
		return fieldErr(fmt.Sprintf("%d is out of range (4 to 64)", d), "policy", "key_digits")
	}
	r := s.Policy.Retry
	if r.Backoff < 1 {
		return fieldErr(fmt.Sprintf("%v is below 1", r.Backoff), "policy", "retry", "backoff")
	}
	if r.MaxAttempts < 0 {
		return fieldErr("must be 0 (unlimited) or more", "policy", "retry", "max_attempts")
	}
	for i, o := range r.NonRetryable {
		if !oneOf(o, "timeout", "error", "conflict", "mismatch", "rejected") {
			return fieldErr(fmt.Sprintf("unknown outcome %q (valid: timeout, error, conflict, mismatch, rejected)", o), "policy", "retry", "non_retryable", strconv.Itoa(i))
		}
	}
	if len(s.Tools) == 0 {
		return fieldErr("missing (declare at least one tool)", "tools")
	}
	names := make([]string, 0, len(s.Tools))
	for name := range s.Tools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := s.Tools[name]
		ops, ok := opsByService[t.Service]
		if !ok {
			return fieldErr(fmt.Sprintf("unknown service %q (valid: crm, mail)", t.Service), "tools", name, "service")
		}
		if !oneOf(t.Op, ops...) {
			return fieldErr(fmt.Sprintf("unknown op %q for service %s (valid: %s)", t.Op, t.Service, strings.Join(ops, ", ")), "tools", name, "op")
		}
		if !oneOf(t.Kind, KindRead, KindIdempotent, KindKeyed, KindUnsafe) {
			return fieldErr(fmt.Sprintf("unknown kind %q (valid: %s)", t.Kind, list(KindRead, KindIdempotent, KindKeyed, KindUnsafe)), "tools", name, "kind")
		}
	}
	if len(s.Turns) == 0 {
		return fieldErr("missing (the agent needs at least one turn)", "turns")
	}
	steps := map[string]bool{}
	earlier := map[string]bool{} // steps whose results a later call may refer to
	for ti, turn := range s.Turns {
		tp := []string{"turns", strconv.Itoa(ti)}
		for ci, c := range turn.Calls {
			cp := append(append([]string{}, tp...), "calls", strconv.Itoa(ci))
			if c.Step == "" {
				return fieldErr("missing (every call needs a step id)", append(cp, "step")...)
			}
			if !validStep.MatchString(c.Step) {
				return fieldErr(fmt.Sprintf("%q is not a valid step id (letters, digits, '.', '-' and '_')", c.Step), append(cp, "step")...)
			}
			if steps[c.Step] {
				return fieldErr(fmt.Sprintf("step id %q is used twice", c.Step), append(cp, "step")...)
			}
			if err := checkRefs(c.Args, earlier, append(cp, "args")); err != nil {
				return err
			}
			if c.AgentRetry != nil {
				if err := checkRefs(c.AgentRetry.Args, earlier, append(cp, "agent_retry", "args")); err != nil {
					return err
				}
			}
			steps[c.Step] = true
			earlier[c.Step] = true
			if ar := c.AgentRetry; ar != nil && ar.FreshStep {
				for n := 1; n <= max(ar.Max, 1); n++ {
					earlier[FreshStepID(c.Step, n)] = true
				}
			}
			if _, ok := s.Tools[c.Tool]; !ok {
				return fieldErr(fmt.Sprintf("unknown tool %q (valid: %s)", c.Tool, strings.Join(names, ", ")), append(cp, "tool")...)
			}
			if c.Concurrent < 0 || c.Concurrent > MaxConcurrent {
				return fieldErr(fmt.Sprintf("%d is out of range (1 to %d; 0 means 1)", c.Concurrent, MaxConcurrent), append(cp, "concurrent")...)
			}
			if ar := c.AgentRetry; ar != nil {
				ap := append(append([]string{}, cp...), "agent_retry")
				if c.Concurrent > 1 {
					return fieldErr("a call with concurrent copies cannot have an agent_retry", ap...)
				}
				if ar.Max < 0 {
					return fieldErr("must be 1 or more (0 means 1)", append(ap, "max")...)
				}
				for name := range ar.Args {
					if name == "" {
						return fieldErr("an argument name is empty", append(ap, "args")...)
					}
				}
			}
		}
	}
	for i, f := range s.Faults {
		fp := []string{"faults", strconv.Itoa(i)}
		if _, err := fault.Parse(string(f.Point)); err != nil {
			return fieldErr(err.Error(), append(fp, "point")...)
		}
		if f.Step != "" && !steps[f.Step] {
			return fieldErr(fmt.Sprintf("no call has step id %q", f.Step), append(fp, "step")...)
		}
		if f.Attempt < 0 {
			return fieldErr("must be 0 (any) or more", append(fp, "attempt")...)
		}
	}
	if err := s.validateExpect(steps); err != nil {
		return err
	}
	return s.validateLesson()
}

// argRef is a reference in an argument string: ${run} or ${STEP.field}, as
// the agent substitutes them.
var argRef = regexp.MustCompile(`\$\{([A-Za-z0-9_.-]+)\}`)

// checkRefs refuses references to no earlier step (a misspelt step id would
// otherwise reach the provider as literal text) and malformed ones.
func checkRefs(v any, earlier map[string]bool, path []string) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := checkRefs(x[k], earlier, append(append([]string{}, path...), k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkRefs(e, earlier, append(append([]string{}, path...), strconv.Itoa(i))); err != nil {
				return err
			}
		}
	case string:
		refs := argRef.FindAllStringSubmatch(x, -1)
		if len(refs) < strings.Count(x, "${") {
			return fieldErr(fmt.Sprintf("%q has a malformed reference (write ${run} or ${STEP.field}, e.g. ${step-4.message_id})", x), path...)
		}
		for _, m := range refs {
			if m[1] == "run" || refersTo(m[1], earlier) {
				continue
			}
			names := make([]string, 0, len(earlier))
			for s := range earlier {
				names = append(names, s)
			}
			sort.Strings(names)
			known := "no call comes before this one"
			if len(names) > 0 {
				known = "earlier steps: " + strings.Join(names, ", ")
			}
			return fieldErr(fmt.Sprintf("%s refers to no earlier step's result (write ${STEP.field}; %s)", m[0], known), path...)
		}
	}
	return nil
}

// refersTo reports whether ref is STEP.field for an earlier STEP (step ids
// may hold dots: the agent takes the longest one that exists).
func refersTo(ref string, earlier map[string]bool) bool {
	parts := strings.Split(ref, ".")
	for i := len(parts) - 1; i >= 1; i-- {
		if earlier[strings.Join(parts[:i], ".")] {
			return true
		}
	}
	return false
}

// MaxConcurrent bounds Call.Concurrent.
const MaxConcurrent = 8

// validateExpect checks the expected outcome and the verify script.
func (s *Scenario) validateExpect(steps map[string]bool) error {
	e := s.Expect
	started := false
	for i, a := range e.Script {
		ap := []string{"expect", "script", strconv.Itoa(i)}
		if err := ValidateAction(a); err != nil {
			return fieldErr(err.Error(), ap...)
		}
		verb, arg, _ := strings.Cut(strings.TrimSpace(a), " ")
		switch verb {
		case "run", "submit", "submit-twice":
			started = true
		case "resume", "delete-journal":
			if !started {
				return fieldErr(fmt.Sprintf("%q needs an execution: put run or submit before it", verb), ap...)
			}
		}
		if verb == "delete-journal" {
			if base := strings.TrimSuffix(arg, DecisionSuffix); !steps[base] {
				return fieldErr(fmt.Sprintf("no call has step id %q", arg), ap...)
			}
		}
	}
	if e.Status != "" && !oneOf(e.Status, "completed", "killed", "failed", "escalated") {
		return fieldErr(fmt.Sprintf("unknown status %q (valid: completed, killed, failed, escalated)", e.Status), "expect", "status")
	}
	recipients := make([]string, 0, len(e.Outbox))
	for to := range e.Outbox {
		recipients = append(recipients, to)
	}
	sort.Strings(recipients)
	for _, to := range recipients {
		if !strings.Contains(to, "@") {
			return fieldErr(fmt.Sprintf("%q is not an email address (write recipient: count)", to), "expect", "outbox", to)
		}
		if e.Outbox[to] < 0 {
			return fieldErr("a message count cannot be negative", "expect", "outbox", to)
		}
	}
	for _, c := range []struct {
		name string
		v    *int
	}{{"crm_rows", e.CRMRows}, {"crm_writes", e.CRMWrites}, {"mail_requests", e.MailRequests},
		{"executions", e.Executions}, {"runs", e.Runs}} {
		if c.v != nil && *c.v < 0 {
			return fieldErr("cannot be negative", "expect", c.name)
		}
	}
	attemptSteps := make([]string, 0, len(e.Attempts))
	for step := range e.Attempts {
		attemptSteps = append(attemptSteps, step)
	}
	sort.Strings(attemptSteps)
	for _, step := range attemptSteps {
		if !s.knownAttemptStep(step) {
			return fieldErr(fmt.Sprintf("no call has step id %q (an agent retry with fresh_step uses STEP-retryN)", step), "expect", "attempts", step)
		}
		if e.Attempts[step] < 0 {
			return fieldErr("an attempt count cannot be negative", "expect", "attempts", step)
		}
	}
	return nil
}

// DecisionSuffix names the journal record of a call's decision (its rendered
// arguments) when the policy journals decisions: step id + "#args".
const DecisionSuffix = "#args"

// knownAttemptStep reports whether attempts can be made under a step id:
// a call's own, or the fresh step id of one of its agent-level retries.
func (s *Scenario) knownAttemptStep(step string) bool {
	for _, t := range s.Turns {
		for _, c := range t.Calls {
			if c.Step == step {
				return true
			}
			if ar := c.AgentRetry; ar != nil && ar.FreshStep {
				for n := 1; n <= ar.Max; n++ {
					if step == FreshStepID(c.Step, n) {
						return true
					}
				}
			}
		}
	}
	return false
}

// FreshStepID is the step id an agent-level retry with fresh_step gives its
// nth new call: the mistake that changes the key.
func FreshStepID(step string, n int) string { return fmt.Sprintf("%s-retry%d", step, n) }

// validateLesson checks what a scenario in the lesson path (order > 0) needs:
// a title, an explanation, narration for each stage and a number to predict.
func (s *Scenario) validateLesson() error {
	if s.Order == 0 {
		return nil
	}
	for _, f := range []struct {
		v    string
		path []string
	}{
		{s.Title, []string{"title"}},
		{s.Teaches, []string{"teaches"}},
		{s.Narration.Intro, []string{"narration", "intro"}},
		{s.Narration.Predict, []string{"narration", "predict"}},
		{s.Narration.Outro, []string{"narration", "outro"}},
	} {
		if strings.TrimSpace(f.v) == "" {
			return fieldErr("missing (a scenario in the lesson path, order > 0, needs it)", f.path...)
		}
	}
	if len(s.Expect.Outbox) == 0 && s.Expect.CRMRows == nil {
		return fieldErr("a lesson asks the learner to predict a number: give expect.outbox or expect.crm_rows", "expect")
	}
	return nil
}

// ValidateAction checks one verify script action.
func ValidateAction(a string) error {
	verb, arg, _ := strings.Cut(strings.TrimSpace(a), " ")
	switch verb {
	case "run", "resume", "reset-world", "submit", "submit-twice":
		if arg != "" {
			return fmt.Errorf("%q takes no argument", verb)
		}
	case "delete-journal":
		if arg == "" {
			return fmt.Errorf("delete-journal needs a step id")
		}
	case "advance":
		var d Duration
		if err := d.UnmarshalText([]byte(arg)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown action %q (valid: run, resume, delete-journal STEP, advance DURATION, reset-world, submit, submit-twice)", a)
	}
	return nil
}
