package engine

import "github.com/retrylab/retrylab/engine/world"

// WorldOf lets the engine's tests look inside the simulated world (a key's
// stored response, say), which the host's API does not offer.
func WorldOf(h *Host) *world.World { return h.world }
