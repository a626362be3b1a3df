package attrib

import (
	"net/http"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, a := range []Attribution{
		{Execution: "exec_00D9ZK7Z", Step: "step-4", Key: "ik_1", Attempt: 2, Run: 3},
		{Execution: "exec_1", Step: "s", Attempt: 1, Run: 1},
		{},
	} {
		h := http.Header{}
		a.SetHeader(h)
		if got, want := h.Get(HeaderIdempotencyKey), a.Key; got != want {
			t.Errorf("%+v: Idempotency-Key %q, want %q", a, got, want)
		}
		if _, set := h[http.CanonicalHeaderKey(HeaderIdempotencyKey)]; set != (a.Key != "") {
			t.Errorf("%+v: Idempotency-Key set %v", a, set)
		}
		got := FromHeader(h)
		want := a
		want.Key = "" // read by the provider's own rules
		if got != want {
			t.Errorf("FromHeader(SetHeader(%+v)) = %+v", a, got)
		}
	}
}

func TestFromHeaderRefusesBadNumbers(t *testing.T) {
	for _, v := range []string{"", "-1", "two", "1.5"} {
		h := http.Header{}
		h.Set(HeaderAttempt, v)
		h.Set(HeaderRun, v)
		if a := FromHeader(h); a.Attempt != 0 || a.Run != 0 {
			t.Errorf("%q reads as attempt %d run %d, want 0", v, a.Attempt, a.Run)
		}
	}
	h := http.Header{}
	h.Set(HeaderAttempt, " 7 ")
	if a := FromHeader(h); a.Attempt != 7 {
		t.Errorf("\" 7 \" reads as %d, want 7", a.Attempt)
	}
}
