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
func Parse(file string, data []byte) (*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("file is %d bytes; a scenario is at most %d", len(data), MaxFileSize)}
	}
	if !utf8.Valid(data) {
		line := 1 + bytes.Count(data[:invalidUTF8At(data)], []byte("\n"))
		return nil, &Error{File: file, Line: line, Msg: "file is not UTF-8 text"}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(file, err)
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: file, Line: 1, Msg: "file is empty"}
	}
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(file, err)
	}
	s.Source = file
	doc := root.Content[0]
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
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: friendlyYAML(m[2])}
	}
	return &Error{File: file, Msg: friendlyYAML(msg)}
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
		"Scenario":   "name, title, teaches, execution, policy, tools, turns, faults, narration, expect, order",
		"Policy":     "keys, journal, key_digits, key_from, canonical, retention, retry",
		"Retry":      "initial, backoff, max_interval, max_attempts, timeout, non_retryable",
		"Tool":       "service, op, kind, dedupe",
		"Turn":       "text, calls",
		"Call":       "step, tool, args, agent_retry",
		"AgentRetry": "text, fresh_step, max, reorder",
		"Fault":      "step, attempt, point",
		"Narration":  "intro, outro, predict",
		"Expect":     "script, outbox, crm_rows, status, mail_requests",
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

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

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
		r.Timeout = Duration(300e6)
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
	if !oneOf(s.Policy.KeyFrom, KeyFromIntent, KeyFromAttempt, KeyFromTimestamp) {
		return fieldErr(fmt.Sprintf("unknown value %q (valid: %s)", s.Policy.KeyFrom, list(KeyFromIntent, KeyFromAttempt, KeyFromTimestamp)), "policy", "key_from")
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
	for ti, turn := range s.Turns {
		tp := []string{"turns", strconv.Itoa(ti)}
		for ci, c := range turn.Calls {
			cp := append(append([]string{}, tp...), "calls", strconv.Itoa(ci))
			if c.Step == "" {
				return fieldErr("missing (every call needs a step id)", append(cp, "step")...)
			}
			if steps[c.Step] {
				return fieldErr(fmt.Sprintf("step id %q is used twice", c.Step), append(cp, "step")...)
			}
			steps[c.Step] = true
			if _, ok := s.Tools[c.Tool]; !ok {
				return fieldErr(fmt.Sprintf("unknown tool %q (valid: %s)", c.Tool, strings.Join(names, ", ")), append(cp, "tool")...)
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
	for i, a := range s.Expect.Script {
		if err := ValidateAction(a); err != nil {
			return fieldErr(err.Error(), "expect", "script", strconv.Itoa(i))
		}
	}
	if s.Expect.Status != "" && !oneOf(s.Expect.Status, "completed", "killed", "failed", "escalated") {
		return fieldErr(fmt.Sprintf("unknown status %q (valid: completed, killed, failed, escalated)", s.Expect.Status), "expect", "status")
	}
	return nil
}

// ValidateAction checks one verify script action.
func ValidateAction(a string) error {
	verb, arg, _ := strings.Cut(strings.TrimSpace(a), " ")
	switch verb {
	case "run", "resume", "reset-world", "submit-twice":
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
		return fmt.Errorf("unknown action %q (valid: run, resume, delete-journal STEP, advance DURATION, reset-world, submit-twice)", a)
	}
	return nil
}
