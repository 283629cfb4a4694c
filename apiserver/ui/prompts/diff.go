package prompts

// diffLine is one line of a line diff: kept, removed (only in the old
// version) or added (only in the new one).
type diffLine struct {
	Op   string // " ", "-" or "+"
	Text string
}

// maxDiffCells bounds the table of the longest-common-subsequence diff;
// larger pairs are shown as all removed and all added, which is still
// correct, just not minimal.
const maxDiffCells = 4_000_000

// diffLines is a minimal line diff of old against new, by the longest
// common subsequence.
func diffLines(old, new []string) []diffLine {
	n, m := len(old), len(new)
	if n*m > maxDiffCells {
		out := make([]diffLine, 0, n+m)
		for _, l := range old {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range new {
			out = append(out, diffLine{"+", l})
		}
		return out
	}
	// lcs[i][j] is the common subsequence length of old[i:] and new[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if old[i] == new[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	out := make([]diffLine, 0, max(n, m))
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case old[i] == new[j]:
			out = append(out, diffLine{" ", old[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", old[i]})
			i++
		default:
			out = append(out, diffLine{"+", new[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, diffLine{"-", old[i]})
	}
	for ; j < m; j++ {
		out = append(out, diffLine{"+", new[j]})
	}
	return out
}
