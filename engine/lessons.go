package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/retrylab/retrylab/store"
)

// LessonState is a workshop's progress through the lesson path, kept in the
// database so a workshop can stop and resume where it left off. Its meaning
// belongs to the lesson package; the engine only keeps it.
type LessonState struct {
	// Done lists the finished steps, in the order they were finished.
	Done []LessonAnswer `json:"done"`
	// Updated is when the state was last saved.
	Updated time.Time `json:"updated,omitzero"`
}

// LessonAnswer is one finished lesson step: what the learner predicted and
// what the provider actually held.
type LessonAnswer struct {
	Scenario string `json:"scenario"`
	// Predicted is the learner's number; -1 when they gave none.
	Predicted int  `json:"predicted"`
	Actual    int  `json:"actual"`
	Correct   bool `json:"correct"`
}

// lessonKey is where the state lives in store.Lessons.
var lessonKey = []byte("progress")

// LessonProgress reads the saved lesson progress; a database without any
// gives the zero state.
func (h *Host) LessonProgress() (LessonState, error) {
	var data []byte
	if err := h.db.View(func(tx *store.Tx) error { data = tx.Get(store.Lessons, lessonKey); return nil }); err != nil {
		return LessonState{}, fmt.Errorf("read lesson progress: %w", err)
	}
	var st LessonState
	if data == nil {
		return st, nil
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return LessonState{}, fmt.Errorf("read lesson progress: %w", err)
	}
	return st, nil
}

// SetLessonProgress saves the lesson progress durably, stamping Updated.
// The zero state clears it.
func (h *Host) SetLessonProgress(st LessonState) error {
	err := h.db.Update(func(tx *store.Tx) error {
		if len(st.Done) == 0 {
			return tx.Delete(store.Lessons, lessonKey)
		}
		st.Updated = h.clock.Now()
		data, err := json.Marshal(st)
		if err != nil {
			return err
		}
		return tx.Put(store.Lessons, lessonKey, data)
	})
	if err != nil {
		return fmt.Errorf("save lesson progress: %w", err)
	}
	return nil
}

// ResetForLesson wipes executions, journals and the world like Reset, the
// article's `reset` between experiments, but keeps the lesson progress: the
// wipe and the progress's survival are one commit. It refuses while a
// worker runs.
func (h *Host) ResetForLesson() error {
	if running := h.Running(); len(running) > 0 {
		return fmt.Errorf("cannot reset for the next lesson while %s is running", running[0])
	}
	err := h.db.Update(func(tx *store.Tx) error {
		keep := tx.Get(store.Lessons, lessonKey)
		if err := tx.ClearAll(); err != nil {
			return err
		}
		if keep == nil {
			return nil
		}
		return tx.Put(store.Lessons, lessonKey, keep)
	})
	if err != nil {
		return fmt.Errorf("reset for lesson: %w", err)
	}
	h.mu.Lock()
	h.execs = map[string]*execState{}
	h.armed = nil
	h.mu.Unlock()
	return h.ResetWorld()
}
