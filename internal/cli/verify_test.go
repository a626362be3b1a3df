package cli

import (
	"path/filepath"
	"testing"
)

// verify's -j below 1 is a usage error (exit 2), said alone, as chaos's
// --concurrency 0 is: it was quietly taken as 1 and every scenario ran.
func TestCLIVerifyBadJobs(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	for _, args := range [][]string{{"verify", "-j", "0"}, {"verify", "--jobs=-1", "naive"}, {"verify", "-j", "0", "--all-policies", "naive"}} {
		if msg := fails(t, 2, db, args...); msg != "retrylab: verify: --jobs must be at least 1" {
			t.Errorf("%v: %q", args, msg)
		}
	}
}
