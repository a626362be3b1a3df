package narrate

import "github.com/retrylab/retrylab/engine/world"

// Intent is one logical operation as the provider sees it: one execution
// sending one subject to one recipient. More than one delivery for one
// intent is a duplicate, whatever step ids or keys the attempts carried.
type Intent struct {
	Execution, To, Subject string
}

// Group is the deliveries of one intent.
type Group struct {
	Intent   Intent
	Messages []world.Message
}

// Duplicate reports whether the intent was delivered more than once. An
// unattributed intent (an external client) is never called a duplicate:
// nothing says its sends were meant as one.
func (g Group) Duplicate() bool { return len(g.Messages) > 1 && g.Intent.Execution != "" }

// GroupByIntent groups messages by intent, in order of first delivery.
func GroupByIntent(msgs []world.Message) []Group {
	idx := map[Intent]int{}
	var out []Group
	for _, m := range msgs {
		k := Intent{m.Attribution.Execution, m.To, m.Subject}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Group{Intent: k})
		}
		out[i].Messages = append(out[i].Messages, m)
	}
	return out
}
