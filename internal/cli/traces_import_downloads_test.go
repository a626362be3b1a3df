package cli

import (
	"path/filepath"
	"testing"
)

// 'retrylab import' tells a Tempo or Jaeger download from OTLP by itself
// and says which it read; each imported trace audits as the duplicate it
// holds.
func TestCLIImportTempoAndJaegerDownloads(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	files := []string{
		filepath.Join(repoRoot, "fixtures", "tempo", "mailer-api-v1.json"),
		filepath.Join(repoRoot, "fixtures", "tempo", "mailer-api-v2.json"),
		filepath.Join(repoRoot, "fixtures", "jaeger", "mailer-ui.json"),
		filepath.Join(repoRoot, "fixtures", "jaeger", "mailer-api-v3.json"),
	}
	for i := range files {
		abs, err := filepath.Abs(files[i])
		if err != nil {
			t.Fatal(err)
		}
		files[i] = abs
	}
	r := ok(t, db, append([]string{"import"}, files...)...)
	has(t, r, "mailer-api-v1.json: Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-1",
		"mailer-api-v2.json: Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-2",
		"mailer-ui.json: Jaeger JSON, 6 spans imported -> otlp-conv-jaeger-mail-1",
		"mailer-api-v3.json: Jaeger API v3 JSON, 6 spans imported -> otlp-conv-jaeger-mail-3")
	for _, id := range []string{"otlp-conv-tempo-mail-1", "otlp-conv-jaeger-mail-1"} {
		has(t, must(t, 1, db, "audit", id), "send_email")
	}
}
