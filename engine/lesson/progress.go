package lesson

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/retrylab/retrylab/store"
)

// State is a workshop's progress through the lesson path, kept in the
// database so a workshop can stop and resume where it left off.
type State struct {
	// Done lists the finished steps, in the order they were finished.
	Done []Answer `json:"done"`
	// Updated is when the state was last saved.
	Updated time.Time `json:"updated,omitzero"`
}

// Answer is one finished lesson step: what the learner predicted and what
// the provider actually held.
type Answer struct {
	Scenario string `json:"scenario"`
	// Predicted is the learner's number; -1 when they gave none.
	Predicted int  `json:"predicted"`
	Actual    int  `json:"actual"`
	Correct   bool `json:"correct"`
	// Diff is, for a fix, the line that showed it beside its mistake when
	// it ran ("diff: …", Pairs.Line), kept for the session's handout:
	// the executions are gone by the next lesson.
	Diff string `json:"diff,omitempty"`
}

// Bucket is the collection the progress lives in. The lesson package owns
// it and its encoding (JSON under one key); the host only keeps it across
// the resets between steps.
const Bucket store.Bucket = "lessons"

// progressKey is where the state lives in Bucket.
var progressKey = []byte("progress")

// Keeper is what the progress needs of the host: its database, in whose
// transactions it reads and writes its bucket, and its clock.
// *engine.Host is one.
type Keeper interface {
	Store() *store.DB
	Now() time.Time
}

// LoadProgress reads the saved progress; a database without any gives the
// zero state.
func LoadProgress(k Keeper) (State, error) {
	var st State
	err := k.Store().View(func(tx *store.Tx) error {
		data := tx.Get(Bucket, progressKey)
		if data == nil {
			return nil
		}
		return json.Unmarshal(data, &st)
	})
	if err != nil {
		return State{}, fmt.Errorf("read lesson progress: %w", err)
	}
	return st, nil
}

// SaveProgress saves the progress durably, stamping Updated with the
// keeper's clock. The zero state clears it.
func SaveProgress(k Keeper, st State) error {
	err := k.Store().Update(func(tx *store.Tx) error {
		if len(st.Done) == 0 {
			return tx.Delete(Bucket, progressKey)
		}
		st.Updated = k.Now()
		data, err := json.Marshal(st)
		if err != nil {
			return err
		}
		return tx.Put(Bucket, progressKey, data)
	})
	if err != nil {
		return fmt.Errorf("save lesson progress: %w", err)
	}
	return nil
}
