package otlp

import "testing"

func TestPythonLiteral(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{'to': 'ana@example.com', 'subject': 'Invoice INV-1001'}`, `{"to":"ana@example.com","subject":"Invoice INV-1001"}`},
		{`{"it's": 'say "hi"', 'n': -3, 'f': 1.5, 'ok': True, 'no': False, 'x': None}`,
			`{"it's":"say \"hi\"","n":-3,"f":1.5,"ok":true,"no":false,"x":null}`},
		{`[1, (2, 3), [], {}]`, `[1,[2,3],[],{}]`},
		{`{'a': 'tab\there \'q\' \x41\u00e9'}`, `{"a":"tab\there 'q' Aé"}`},
		{`{'k': ['a', 'b',],}`, `{"k":["a","b"]}`},
	}
	for _, c := range cases {
		got, ok := pythonLiteral(c.in)
		if !ok || string(got) != c.want {
			t.Errorf("pythonLiteral(%s) = %s, %v; want %s", c.in, got, ok, c.want)
		}
	}
	for _, bad := range []string{``, `C-42`, `'just a string'`, `{1: 'a'}`, `{'a': }`, `{'a': 'b'`, `{'a': x}`, `[1, 2] tail`, `{'a': 'b\q'}`} {
		if got, ok := pythonLiteral(bad); ok {
			t.Errorf("pythonLiteral(%s) = %s, want it refused", bad, got)
		}
	}
}

// OpenInference's LangChain input, a Python repr, gives the same arguments
// as the JSON of them in another key order.
func TestReprArgumentsAreTheJSONOnes(t *testing.T) {
	repr := Span{Attrs: AttrsOf(map[string]string{"openinference.span.kind": "TOOL", "input.value": `{'to': 'a@x', 'subject': 'hi'}`})}
	js := Span{Attrs: AttrsOf(map[string]string{"openinference.span.kind": "TOOL", "input.value": `{"subject": "hi", "to": "a@x"}`})}
	if a, b := canonical(repr.Args()), canonical(js.Args()); string(a) != string(b) {
		t.Errorf("repr %s, JSON %s", a, b)
	}
}

// Strands' latest conventions put several tool_call parts in one message
// list at times: the span's own call id picks its part.
func TestToolCallPartByID(t *testing.T) {
	msgs := `[{"role":"tool","parts":[{"type":"tool_call","id":"t1","arguments":{"to":"a"}},{"type":"tool_call","id":"t2","arguments":{"to":"b"}}]}]`
	if got, ok := toolCallPart(msgs, "t2"); !ok || got != `{"to":"b"}` {
		t.Errorf("t2: %s %v", got, ok)
	}
	if got, ok := toolCallPart(msgs, ""); ok {
		t.Errorf("no id, two parts: %s, want none", got)
	}
}

// A wrapped timeout is a timeout; a validation error is refused before the
// tool acts; a plain error stays an error.
func TestWrappedErrors(t *testing.T) {
	exc := func(typ, msg string) []SpanEvent {
		return []SpanEvent{{Name: "exception", Attrs: AttrsOf(map[string]string{"exception.type": typ, "exception.message": msg})}}
	}
	cases := []struct {
		name string
		span Span
		want string
	}{
		{"pydantic-ai ModelRetry from TimeoutError", Span{Status: "error", Events: exc("pydantic_ai.exceptions.ToolRetryError", "TimeoutError: response lost")}, "timeout"},
		{"validation error", Span{Status: "error", Events: exc("pydantic_ai.exceptions.ToolRetryError", "1 validation error for send_invoice_email")}, "rejected"},
		{"Mastra's unknown error", Span{Status: "error", Message: "response lost", Attrs: AttrsOf(map[string]string{"error.type": "unknown"}), Events: exc("Error", "response lost")}, "error"},
		{"a stack frame named for timeouts", Span{Status: "error", Events: exc("Error", "boom\n    at withTimeout (x.js:1:1)")}, "error"},
	}
	for _, c := range cases {
		if got, _ := c.span.outcome(); string(got) != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
