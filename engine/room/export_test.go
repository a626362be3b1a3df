package room

import (
	"time"

	"github.com/retrylab/retrylab/engine"
)

// SetPoll sets how often a participant reader's subscription looks.
func SetPoll(r engine.Reader, d time.Duration) { r.(*ParticipantReader).poll = d }
