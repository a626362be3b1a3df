package scenario

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the scenario parser, as an instructor's
// editor (or a stray binary file) might: it must never panic, and every
// error must be one line that starts with the file name, so the CLI can
// print it as "file:line: field: problem".
func FuzzParse(f *testing.F) {
	f.Add([]byte("name: naive\ntools: {send: {service: mail, op: send, kind: keyed}}\nturns: [{calls: [{step: s, tool: send}]}]\n"))
	f.Add([]byte("name: x\nturns: [{calls: [{step: s, tool: nope}]}]\ntools: {t: {service: mail, op: send, kind: keyed}}\n"))
	f.Add([]byte(""))
	f.Add([]byte("{"))
	const file = "fuzz.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(file, data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, file+":") && !strings.HasPrefix(msg, file+" ") {
				t.Fatalf("error does not start with the file name: %q", msg)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error is not one line: %q", msg)
			}
			if s != nil {
				t.Fatal("a scenario with an error")
			}
			return
		}
		if s == nil || s.Name == "" || len(s.Turns) == 0 || len(s.Tools) == 0 {
			t.Fatalf("accepted an incomplete scenario: %+v", s)
		}
		for _, turn := range s.Turns {
			for _, c := range turn.Calls {
				if _, ok := s.Tools[c.Tool]; !ok {
					t.Fatalf("call %s names unknown tool %q", c.Step, c.Tool)
				}
			}
		}
	})
}
