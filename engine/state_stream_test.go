package engine_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/internal/jsonstream"
	"github.com/retrylab/retrylab/store"
)

// WriteState streams the same JSON that encoding State gives, through the
// host and through an attached client, across several pages of every part
// (1 500 generated executions: more messages, keys and journal records than
// one page holds).
func TestWriteStateIsStateStreamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retrylab.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(context.Background(), db, gen.Options{Executions: 1500, AttemptsPerStep: 2, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	h := openHostAt(t, path, nil)
	s, err := h.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Outbox) <= 512 || len(s.Keys) <= 512 || len(s.Journal) <= 512 {
		t.Fatalf("the state fits one page (%d messages, %d keys, %d journal records): the test pages nothing",
			len(s.Outbox), len(s.Keys), len(s.Journal))
	}
	var want bytes.Buffer
	if err := jsonstream.Write(&want, s); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := h.WriteState(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("host: WriteState differs from State (%d vs %d bytes)", got.Len(), want.Len())
	}
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got.Reset()
	if err := c.WriteState(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("client: WriteState differs from State (%d vs %d bytes)", got.Len(), want.Len())
	}
	// An empty database: every part is [].
	empty := openHost(t, nil)
	got.Reset()
	if err := empty.WriteState(&got); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"outbox\": [],\n  \"keys\": [],\n  \"journal\": [],\n  \"crm\": []\n}\n"; got.String() != want {
		t.Errorf("empty state:\n%s", got.String())
	}
}
