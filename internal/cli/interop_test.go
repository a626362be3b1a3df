package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// The repository's own recordings of JavaScript agent frameworks
// (interop/README.md), each imported by 'retrylab import' into a fresh
// database and audited: the window shows its two sends with their
// arguments, graded POSSIBLE, exit 0; the agent sending two different
// emails is graded nothing, exit 0; two successful identical sends are a
// DUPLICATE, exit 1.
func TestCLIAuditsInteropRecordings(t *testing.T) {
	t.Parallel()
	const send = `send_invoice_email {"subject": "Invoice 42", "to": "ana@example.com"}`
	for _, fw := range []string{"vercel-otel", "vercel-legacy", "langgraph", "mastra", "openai-agents"} {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				scenario string
				code     int
				want     []string
			}{
				{"dup", 0, []string{"POSSIBLE  " + send, "0 duplicate, 1 possible, 0 absorbed"}},
				{"different", 0, []string{"2 side-effecting attempts", "0 duplicate, 0 possible, 0 absorbed"}},
				{"twice", 1, []string{"DUPLICATE " + send, "two attempts succeeded", "1 duplicate, 0 possible, 0 absorbed"}},
			} {
				file, err := filepath.Abs(filepath.Join(repoRoot, "interop", "recordings", fw+"-"+c.scenario+".otlp.json"))
				if err != nil {
					t.Fatal(err)
				}
				db := newDB(t)
				has(t, ok(t, db, "import", file), "OTLP/JSON, ")
				r := must(t, c.code, db, "audit")
				has(t, r, c.want...)
				// Each of the two sends is one attempt line, under the finding.
				if attempts := strings.Count(r.stdout, " attempt 1  ref "); c.scenario != "different" && attempts != 2 {
					t.Errorf("%s: %d attempts shown, want 2\n%s", c.scenario, attempts, r)
				}
				if c.code == 1 {
					if msg := oneLineError(t, r); msg != "retrylab: audit: 1 duplicate effect found" {
						t.Errorf("%s: stderr %q", c.scenario, msg)
					}
				}
			}
		})
	}
}
