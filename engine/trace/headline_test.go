package trace

import "testing"

func TestHeadline(t *testing.T) {
	cases := []struct{ in, want string }{
		{"response lost", "response lost"},
		{"", ""},
		{"response lost\n\nTimeoutError: response lost\n    at f (x.js:1:2)", "response lost …"},
		{"TimeoutError('response lost')Traceback (most recent call last):\n  File \"a.py\", line 1\nTimeoutError: response lost", "TimeoutError('response lost') …"},
		{"Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    raise X\nValueError: bad", "ValueError: bad …"},
		{"\n  one line, padded  \n", "one line, padded"},
	}
	for _, c := range cases {
		if got := Headline(c.in); got != c.want {
			t.Errorf("Headline(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// An execution's end reads as its source gave it, the status once:
// Temporal's "timed out" with "workflow timed out" is "timed out", not
// "failed — workflow timed out"; a reason beyond the status stays.
func TestEndWordsSayTheSourcesStatusOnce(t *testing.T) {
	for _, c := range []struct {
		n           Note
		status, why string
	}{
		{Note{Mark: MarkOK, Text: "completed"}, "completed", ""},
		{Note{Mark: MarkOK}, "completed", ""},
		{Note{Mark: MarkFailed, Text: "timed out", Error: "workflow timed out"}, "timed out", ""},
		{Note{Mark: MarkFailed, Text: "cancelled", Error: "workflow cancelled"}, "cancelled", ""},
		{Note{Mark: MarkFailed, Text: "terminated", Error: "workflow terminated by ops"}, "terminated", "by ops"},
		{Note{Mark: MarkFailed, Text: "failed", Error: "boom"}, "failed", "boom"},
		{Note{Mark: MarkFailed, Error: "failed to deliver"}, "failed", "failed to deliver"},
	} {
		if s, w := c.n.EndWords(); s != c.status || w != c.why {
			t.Errorf("%+v: %q, %q; want %q, %q", c.n, s, w, c.status, c.why)
		}
	}
}
