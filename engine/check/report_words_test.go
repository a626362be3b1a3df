package check

import (
	"bytes"
	"strings"
	"testing"
)

// One of a thing is said in the singular: "1 execution, 1 operation",
// "verdict: FAIL — 1 violation", not "1 executions" as the report said.
func TestReportSaysOneInTheSingular(t *testing.T) {
	r := newReport()
	r.Executions, r.Operations, r.MailEffects, r.CRMWrites = 1, 1, 1, 1
	r.AddViolation(Violation{Execution: "exec_1", Kind: "duplicated", Detail: "2 effects for one intent"})
	var out bytes.Buffer
	r.Write(&out, 0)
	text := out.String()
	for _, want := range []string{"1 execution, 1 operation; ledger: 1 message, 1 CRM write, 0 unattributed\n", "verdict: FAIL — 1 violation\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	r.Executions, r.Operations, r.MailEffects, r.CRMWrites = 2, 0, 3, 2
	r.AddViolation(Violation{Execution: "exec_2", Kind: "duplicated", Detail: "2 effects for one intent"})
	out.Reset()
	r.Write(&out, 0)
	for _, want := range []string{"2 executions, 0 operations; ledger: 3 messages, 2 CRM writes, 0 unattributed\n", "verdict: FAIL — 2 violations\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
