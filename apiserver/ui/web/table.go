package web

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The one way list pages render tables. A page describes its columns, turns
// its rows into cells, and the "table" partial draws headers with sort
// links, a column chooser, row selection for bulk actions and the pager.
// Every piece of state lives in the URL (sort, page, columns, filters,
// search, time range), so a table view is a link.

// Column is a column a table can show.
type Column struct {
	// Key names the column in the URL (col=, sort=).
	Key   string
	Label string
	// Sortable columns get a sort link in their header.
	Sortable bool
	// Numeric columns are right-aligned.
	Numeric bool
	// Hidden columns are off until chosen.
	Hidden bool
}

// Cell is one value of a row. Text is always escaped; a cell never carries
// markup of its own.
type Cell struct {
	Text  string
	Href  string   // a link, when the value opens something
	Title string   // shown on hover (the untruncated value)
	Class string   // a style hook: "mono", "level-ERROR", "muted"
	Tags  []string // rendered as badges after Text
}

// Row is one line of a table.
type Row struct {
	ID    string // the value bulk actions receive
	Href  string // where clicking the row goes
	Cells []Cell // one per visible column, in order
}

// BulkAction is a form the selected rows are posted to.
type BulkAction struct {
	Label   string
	Action  string // the path the form posts to
	Confirm string // asked before posting, when set
	Danger  bool
	// Choose, when set, is a choice posted along (the dataset to add to).
	Choose *Choice
}

// Choice is a select of a form.
type Choice struct {
	Name, Label string
	Options     []Option
}

// Option is one entry of a Choice.
type Option struct {
	Value, Label string
}

// Table is a table ready to render.
type Table struct {
	ID      string // the element id; htmx swaps target it
	Columns []Column
	Rows    []Row
	State   TableState
	// Total is the number of matching rows; -1 when unknown.
	Total int
	Empty string
	Bulk  []BulkAction
	// Chooser lists every column with whether it is shown.
	Chooser []ChosenColumn
	// URL is the page's path; links keep the query and change one thing.
	URL string
}

// ChosenColumn is a column in the column chooser.
type ChosenColumn struct {
	Column
	Shown bool
}

// TableState is the part of the URL that a table reads.
type TableState struct {
	Sort    string // column key
	Desc    bool
	Page    int // from 1
	Limit   int
	Columns []string // chosen columns (col=); nil means the defaults
	Query   url.Values
}

// Page sizes offered; the first is the default.
var pageSizes = []int{50, 100, 25}

// ReadTableState reads sort=<key>.<asc|desc>, page, limit and the chosen
// columns (col=, repeated) from q.
// Unknown sort keys fall back to defaultSort.
func ReadTableState(q url.Values, columns []Column, defaultSort string, defaultDesc bool) TableState {
	s := TableState{Sort: defaultSort, Desc: defaultDesc, Page: 1, Limit: pageSizes[0], Query: q}
	if v := q.Get("sort"); v != "" {
		key, dir, _ := strings.Cut(v, ".")
		for _, c := range columns {
			if c.Key == key && c.Sortable {
				s.Sort, s.Desc = key, dir != "asc"
			}
		}
	}
	if p, err := strconv.Atoi(q.Get("page")); err == nil && p > 0 && p < 1_000_000 {
		s.Page = p
	}
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && slices.Contains(pageSizes, l) {
		s.Limit = l
	}
	for _, k := range q["col"] {
		for _, c := range columns {
			if c.Key == k {
				s.Columns = append(s.Columns, k)
			}
		}
	}
	return s
}

// Offset is the number of rows before the page.
func (s TableState) Offset() int { return (s.Page - 1) * s.Limit }

// NewTable picks the visible columns (chosen, else the defaults) and fills
// the chooser.
func NewTable(id, pageURL string, all []Column, state TableState) *Table {
	t := &Table{ID: id, State: state, Total: -1, URL: pageURL}
	shown := func(c Column) bool {
		if state.Columns == nil {
			return !c.Hidden
		}
		return slices.Contains(state.Columns, c.Key)
	}
	for _, c := range all {
		on := shown(c)
		t.Chooser = append(t.Chooser, ChosenColumn{Column: c, Shown: on})
		if on {
			t.Columns = append(t.Columns, c)
		}
	}
	return t
}

// Shows reports whether the column with key is visible; row builders use
// it to emit cells only for visible columns.
func (t *Table) Shows(key string) bool {
	return slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Key == key })
}

// With returns the page URL with the current query, some keys replaced
// (an empty value removes the key).
func (t *Table) With(kv ...string) string {
	return WithQuery(t.URL, t.State.Query, kv...)
}

// WithQuery returns path with q, some keys replaced (empty removes them).
func WithQuery(path string, q url.Values, kv ...string) string {
	n := url.Values{}
	for k, v := range q {
		n[k] = slices.Clone(v)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			n.Del(kv[i])
		} else {
			n.Set(kv[i], kv[i+1])
		}
	}
	if e := n.Encode(); e != "" {
		return path + "?" + e
	}
	return path
}

// SortLink is the URL that sorts by the column: descending first, and the
// other way round when it is the current sort.
func (t *Table) SortLink(key string) string {
	dir := "desc"
	if t.State.Sort == key && t.State.Desc {
		dir = "asc"
	}
	return t.With("sort", key+"."+dir, "page", "")
}

// SortMark is the arrow of the current sort column.
func (t *Table) SortMark(key string) string {
	if t.State.Sort != key {
		return ""
	}
	if t.State.Desc {
		return "↓"
	}
	return "↑"
}

// HasPrev and HasNext drive the pager.
func (t *Table) HasPrev() bool { return t.State.Page > 1 }

// HasNext is true when a further page may exist.
func (t *Table) HasNext() bool {
	if t.Total >= 0 {
		return t.State.Offset()+len(t.Rows) < t.Total
	}
	return len(t.Rows) == t.State.Limit
}

// PrevLink and NextLink move one page.
func (t *Table) PrevLink() string { return t.With("page", strconv.Itoa(t.State.Page-1)) }

// NextLink moves one page on.
func (t *Table) NextLink() string { return t.With("page", strconv.Itoa(t.State.Page+1)) }

// FirstRow and LastRow number the rows shown, for "51–100 of 734".
func (t *Table) FirstRow() int {
	if len(t.Rows) == 0 {
		return 0
	}
	return t.State.Offset() + 1
}

// LastRow is the number of the last row shown.
func (t *Table) LastRow() int { return t.State.Offset() + len(t.Rows) }

// Hidden lists the query parameters the chooser form must carry along,
// all but the ones it sets itself.
func (t *Table) Hidden(except ...string) [][2]string {
	var out [][2]string
	keys := make([]string, 0, len(t.State.Query))
	for k := range t.State.Query {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(except, k) {
			continue
		}
		for _, v := range t.State.Query[k] {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}
