package engine

import (
	"fmt"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// OpenReadOnly opens the database read-only (store.Options.ReadOnly: a
// shared lock, and no byte of the file written, so it also reads a file
// this user cannot write) and returns a Host that only reads: its queries
// answer as an open host's do, and everything that would write (a run, a
// reset, a journal deletion, a clock move) fails. It starts no services,
// no runtime API and no workers, and announces itself to no one.
//
// What a read-write Open does to a file before anyone reads it is left
// undone: executions a dead host left running are not marked killed, and
// in-flight keys a dead provider left stay. Notes says, in one line each,
// what of that the file holds, so a reader can tell its user.
func OpenReadOnly(cfg Config) (*Host, error) {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock
	}
	db, err := store.Open(cfg.DBPath, store.Options{LockTimeout: cfg.LockTimeout, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	h := &Host{
		cfg:          cfg,
		clock:        cfg.Clock,
		db:           db,
		catalog:      scenario.NewCatalog(cfg.Scenarios),
		bus:          newBus(),
		execs:        map[string]*execState{},
		procs:        map[int]*process{},
		quit:         make(chan struct{}),
		mailRequests: map[string]int{},
		readOnly:     true,
	}
	w, err := world.New(world.Config{DB: db, Clock: cfg.Clock, ReadOnly: true})
	if err != nil {
		db.Close()
		return nil, err
	}
	h.world = w
	return h, nil
}

// Notes says, one line each, what a read-only host leaves as it finds it
// that a read-write open would have written first: executions a host that
// died left running. It is empty for a host that owns its file.
func (h *Host) Notes() ([]string, error) {
	if !h.readOnly {
		return nil, nil
	}
	var built bool
	if err := h.db.View(func(tx *store.Tx) error { built = tx.Meta(activeIndexBuilt) != nil; return nil }); err != nil {
		return nil, err
	}
	if !built {
		return nil, nil
	}
	running, err := h.unfinished(history.StatusRunning)
	if err != nil {
		return nil, err
	}
	if len(running) == 0 {
		return nil, nil
	}
	return []string{fmt.Sprintf("%s: %d execution(s) show as running, but no retrylab has the file open: the host that ran them died; opening it to write (retrylab run, the explorer) records their end",
		h.db.Path(), len(running))}, nil
}
