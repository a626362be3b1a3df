package cli

// The hosts a command opens besides the one of --db: throwaway ones, and
// the lessons' own.

import (
	"errors"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
)

// scratchOpener opens throwaway hosts for the other half of a
// mistake/fix pair that the database at hand does not hold.
func scratchOpener() verify.Opener {
	return verify.Scratch(engine.Config{Scenarios: fixtures.FS, NoSync: true})
}

// openLessonHost opens the lessons' own database, beside --db.
func (a *app) openLessonHost() (*control.Server, error) {
	path := lesson.DBPath(a.dbPath)
	h, err := control.Open(engine.Config{DBPath: path, Scenarios: fixtures.FS, Imports: a.imports, Companion: a.lessonRoomCompanion(a.dbPath)})
	if errors.Is(err, store.ErrLocked) {
		return nil, &exitError{code: 1, msg: "the lessons' database " + path + " is open in another retrylab (a lesson or the explorer's lesson mode): close it first"}
	}
	return h, err
}
