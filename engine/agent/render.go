package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Render substitutes ${run} and ${step.field} references in a call's
// arguments as the agent does (results maps step ids to decoded results):
// the same rendering for agents that run elsewhere, as Temporal workflows.
func Render(args any, results map[string]any, run int) any { return render(args, results, run) }

var ref = regexp.MustCompile(`\$\{([A-Za-z0-9_.-]+)\}`)

// render substitutes ${run} and ${step.field} references in argument
// strings. A string that is exactly one reference takes the referenced value
// itself; references inside longer strings are spliced in as text.
func render(v any, results map[string]any, run int) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = render(val, results, run)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = render(val, results, run)
		}
		return out
	case string:
		if m := ref.FindStringSubmatch(x); m != nil && m[0] == x {
			if val, ok := lookup(m[1], results, run); ok {
				return val
			}
			return x
		}
		return ref.ReplaceAllStringFunc(x, func(s string) string {
			val, ok := lookup(s[2:len(s)-1], results, run)
			if !ok {
				return s
			}
			if str, isStr := val.(string); isStr {
				return str
			}
			return fmt.Sprint(val)
		})
	}
	return v
}

func lookup(path string, results map[string]any, run int) (any, bool) {
	if path == "run" {
		return json.Number(strconv.Itoa(run)), true
	}
	parts := strings.Split(path, ".")
	for i := len(parts) - 1; i >= 1; i-- {
		// Step ids may contain dots; take the longest step id that exists.
		cur, ok := results[strings.Join(parts[:i], ".")]
		if !ok {
			continue
		}
		for _, p := range parts[i:] {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return nil, false
			}
			if cur, ok = m[p]; !ok {
				return nil, false
			}
		}
		return cur, true
	}
	return nil, false
}
