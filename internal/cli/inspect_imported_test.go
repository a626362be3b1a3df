package cli

import (
	"path/filepath"
	"testing"
)

// show tells what only the whole history can: the effect each attempt
// caused, as recorded, and the crashed attempt whose outcome the agent
// never learnt though the provider delivered (◆).
func TestCLIShowReadsEffectsFromTheHistory(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	must(t, 137, db, "run", "crash") // the worker is killed
	ok(t, db, "resume")
	has(t, ok(t, db, "show"),
		"[mail-api]  delivered id=msg_3def2b to jordan@acme.dev for step-4 attempt 1 (recorded)",
		"[trace]     ◆ attempt 1 of step-4: outcome unknown, provider delivered msg_3def2b",
		"[mail-api]  delivered id=msg_fee683 to jordan@acme.dev for step-4 attempt 2 (recorded)")
}

// show's two formats exclude each other, as diff's and audit's do, and an
// imported execution has no handout: both are refused, not ignored.
func TestCLIShowRefusesFormatsItCannotHonour(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	fixture, err := filepath.Abs(filepath.Join(repoRoot, "fixtures/otlp/genai-semconv.json"))
	if err != nil {
		t.Fatal(err)
	}
	ok(t, db, "import", fixture)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "exec_7K2Q", "--json", "--markdown"}, "retrylab: show: --json and --markdown exclude each other"},
		{[]string{"show", "otlp-conv-conv-9", "--markdown"}, "retrylab: show: otlp-conv-conv-9 is imported: it has no handout (try show --json, or audit --markdown)"},
	} {
		r := must(t, 2, db, tt.args...)
		if msg := oneLineError(t, r); msg != tt.want {
			t.Errorf("%v: stderr %q, want %q", tt.args, msg, tt.want)
		}
		if r.stdout != "" {
			t.Errorf("%v: an error printed on stdout\n%s", tt.args, r)
		}
	}
}
