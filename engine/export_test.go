package engine

import "github.com/retrylab/retrylab/engine/world"

// WorldOf lets the engine's tests look inside the simulated world (a key's
// stored response, say), which the host's API does not offer.
func WorldOf(h *Host) *world.World { return h.world }

// OldImportsFlagged is closed once the host's background pass that gives
// old imports their duplicate flag returned (flagOldImports).
func OldImportsFlagged(h *Host) <-chan struct{} { return h.flagging.done }

// RuntimeToken is the runtime API's bearer token, which the host hands its
// workers.
func RuntimeToken(h *Host) string { return h.token }
