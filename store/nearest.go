package store

import (
	"sort"
	"strings"
)

// Nearest returns the stored models' names closest to name, nearest first,
// at most three: those within a third of its length in edit distance
// (letters compared without case, at least 2 edits allowed), or that it
// is a prefix of or has as a prefix ("stories" → "stories260K"). It is
// for the error of a mistyped name; a store that cannot be listed has
// none.
func (s *Store) Nearest(name string) []string {
	all, err := s.List()
	if err != nil {
		return nil
	}
	type near struct {
		name string
		d    int
	}
	var found []near
	low := strings.ToLower(name)
	limit := max(2, len([]rune(name))/3)
	for _, e := range all {
		for _, n := range []string{e.Name, e.Ref} {
			if n == "" || n == name {
				continue
			}
			ln := strings.ToLower(n)
			d := editDistance(low, ln)
			if d > limit && !strings.HasPrefix(ln, low) && !strings.HasPrefix(low, ln) {
				continue
			}
			found = append(found, near{e.Name, d})
			break
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].d < found[j].d })
	var out []string
	for _, f := range found {
		if len(out) == 3 {
			break
		}
		out = append(out, f.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b in runes:
// insertions, deletions and substitutions, one row of the table at a time.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	row := make([]int, len(rb)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			next := min(row[j]+1, row[j-1]+1, diag+cost)
			diag, row[j] = row[j], next
		}
	}
	return row[len(rb)]
}
