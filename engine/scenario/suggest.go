package scenario

import (
	"sort"
	"strings"
)

// maxSuggestions is how many names Nearest gives at most.
const maxSuggestions = 3

// Nearest is the names a mistyped name most likely meant, nearest first:
// those within a few edits of it (one for every four letters, at least
// one; two letters swapped count as one edit) and those it begins, at
// most three. None when nothing is near.
func Nearest(name string, names []string) []string {
	typed := strings.ToLower(name)
	limit := max(1, len([]rune(typed))/4)
	type near struct {
		name string
		dist int
	}
	var found []near
	for _, n := range names {
		d := editDistance(typed, strings.ToLower(n))
		if d > limit && !(len(typed) >= 3 && strings.HasPrefix(strings.ToLower(n), typed)) {
			continue
		}
		found = append(found, near{n, d})
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].dist < found[j].dist })
	out := make([]string, 0, min(len(found), maxSuggestions))
	for _, f := range found[:min(len(found), maxSuggestions)] {
		out = append(out, f.name)
	}
	return out
}

// editDistance is the number of edits from a to b, in runes: a letter
// inserted, deleted or replaced, or two neighbours swapped (the optimal
// string alignment distance).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	rows := [3][]int{make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		before, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
		}
		rows = [3][]int{prev, cur, before}
	}
	return rows[1][len(rb)]
}
