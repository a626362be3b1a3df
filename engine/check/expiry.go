package check

// judgedExpiry is plan with its keys expired or not as the execution's
// record shows, not as its scenario's script planned: the keys count as
// expired when the provider acted twice under one key, the second time
// more than the retention after the first by the world clock (the clock
// moved past the retention, and the provider forgot the key). A run of
// key-retention resumed without the script's 'advance' kept its keys and
// left one effect; one whose clock was moved by hand left two.
func (w *walk) judgedExpiry(plan Plan) Plan {
	plan.ExpireKeys = false
	for _, in := range w.intents {
		if in.agg.expired {
			plan.ExpireKeys = true
			break
		}
	}
	return plan
}
