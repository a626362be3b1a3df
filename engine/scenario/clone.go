package scenario

// Clone returns a deep copy of s: changing the copy (a test breaking a
// property, a run overriding the policy) leaves s as it was. The catalogue
// keeps each parsed scenario and hands out clones.
func (s *Scenario) Clone() *Scenario {
	if s == nil {
		return nil
	}
	c := *s
	c.Policy.Canonical = clonePtr(s.Policy.Canonical)
	c.Policy.Retry.NonRetryable = cloneSlice(s.Policy.Retry.NonRetryable)
	if s.Tools != nil {
		c.Tools = make(map[string]Tool, len(s.Tools))
		for name, t := range s.Tools {
			t.Dedupe = clonePtr(t.Dedupe)
			c.Tools[name] = t
		}
	}
	if s.Turns != nil {
		c.Turns = make([]Turn, len(s.Turns))
		for i, t := range s.Turns {
			if t.Calls != nil {
				calls := make([]Call, len(t.Calls))
				for j, call := range t.Calls {
					call.Args = cloneArgs(call.Args)
					call.ArgOrder = cloneSlice(call.ArgOrder)
					if call.AgentRetry != nil {
						ar := *call.AgentRetry
						ar.Args = cloneArgs(ar.Args)
						call.AgentRetry = &ar
					}
					calls[j] = call
				}
				t.Calls = calls
			}
			c.Turns[i] = t
		}
	}
	c.Faults = cloneSlice(s.Faults)
	c.Expect.Script = cloneSlice(s.Expect.Script)
	c.Expect.Outbox = cloneMap(s.Expect.Outbox)
	c.Expect.Attempts = cloneMap(s.Expect.Attempts)
	c.Expect.CRMRows = clonePtr(s.Expect.CRMRows)
	c.Expect.MailRequests = clonePtr(s.Expect.MailRequests)
	c.Expect.CRMWrites = clonePtr(s.Expect.CRMWrites)
	c.Expect.Executions = clonePtr(s.Expect.Executions)
	c.Expect.Runs = clonePtr(s.Expect.Runs)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// cloneArgs copies arguments as YAML decodes them: maps, lists and scalars.
func cloneArgs(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneValue(v)
	}
	return c
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneArgs(v)
	case map[any]any:
		c := make(map[any]any, len(v))
		for k, x := range v {
			c[k] = cloneValue(x)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = cloneValue(x)
		}
		return c
	default:
		return v
	}
}
