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
