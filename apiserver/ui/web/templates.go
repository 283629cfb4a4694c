package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed templates
var baseTemplates embed.FS

// Templates are the pages of one page package, each parsed together with
// the layout and the shared partials. Every page is parsed at start, so a
// broken template stops the server from starting rather than a page from
// rendering; a page's parse is kept from its first render on. Each page
// holds its own copy of the layout's and partials' trees (html/template
// escapes them per page), ~10 MB for all pages: a collector whose UI
// nobody opens does not carry them.
type Templates struct {
	pages map[string]*lazyPage
}

// lazyPage parses its page on first use.
type lazyPage struct {
	parse func() (*template.Template, error)
	once  sync.Once
	t     *template.Template
	err   error
}

func (p *lazyPage) get() (*template.Template, error) {
	p.once.Do(func() { p.t, p.err = p.parse() })
	return p.t, p.err
}

// Parse parses the named page files of fsys (each defines "title" and
// "content", and may define fragments for htmx), each with the layout.
// A page is named by its file name without ".html". Files whose name starts
// with "_" are partials shared by the pages of the set, not pages.
func (a *App) Parse(fsys fs.FS, files ...string) (*Templates, error) {
	var partials, pages []string
	for _, f := range files {
		if strings.HasPrefix(path.Base(f), "_") {
			partials = append(partials, f)
		} else {
			pages = append(pages, f)
		}
	}
	t := &Templates{pages: map[string]*lazyPage{}}
	for _, f := range pages {
		parse := func() (*template.Template, error) { return a.parsePage(fsys, partials, f) }
		if _, err := parse(); err != nil {
			return nil, err
		}
		t.pages[strings.TrimSuffix(path.Base(f), ".html")] = &lazyPage{parse: parse}
	}
	return t, nil
}

// parsePage parses the layout, the partials and one page.
func (a *App) parsePage(fsys fs.FS, partials []string, page string) (*template.Template, error) {
	t, err := template.New("").Funcs(a.funcs()).ParseFS(baseTemplates, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: parse layout: %w", err)
	}
	for _, f := range partials {
		if _, err := t.ParseFS(fsys, f); err != nil {
			return nil, fmt.Errorf("ui: parse partial %s: %w", f, err)
		}
	}
	src, err := fs.ReadFile(fsys, page)
	if err != nil {
		return nil, fmt.Errorf("ui: read template %s: %w", page, err)
	}
	if _, err := t.New(page).Parse(string(src)); err != nil {
		return nil, fmt.Errorf("ui: parse template %s: %w", page, err)
	}
	return t, nil
}

func (a *App) parseLayout() (*Templates, error) {
	return a.Parse(baseTemplates, "templates/pages/error.html")
}

func (t *Templates) page(name string) (*template.Template, error) {
	p, ok := t.pages[name]
	if !ok {
		return nil, fmt.Errorf("ui: no page template %q", name)
	}
	return p.get()
}

func (t *Templates) execute(w io.Writer, page string, v *View) error {
	p, err := t.page(page)
	if err != nil {
		return err
	}
	return p.ExecuteTemplate(w, "layout", v)
}

func (t *Templates) fragment(w io.Writer, page, name string, v *View) error {
	p, err := t.page(page)
	if err != nil {
		return err
	}
	return p.ExecuteTemplate(w, name, v)
}

// View is what every template gets: the request (user, project, role,
// CSRF token) and the page's own data.
type View struct {
	R    *Request
	Data any
	// Orgs fills the organization and project switchers of the top bar.
	Orgs []OrgChoice
	// Nav is the sidebar, with only the entries the role may open.
	Nav []NavSection
}

// OrgChoice is an organization in the switcher, with its projects.
type OrgChoice struct {
	ID, Name string
	Role     controlplane.Role
	Current  bool
	Projects []ProjectChoice
}

// ProjectChoice is a project in the switcher.
type ProjectChoice struct {
	ID, Name string
	Current  bool
}

func (r *Request) view(data any) *View {
	v := &View{R: r, Data: data}
	if r.User == nil || r.HTMX() {
		return v
	}
	v.Orgs = r.switcher()
	if r.Project != nil {
		v.Nav = r.app.navFor(r)
	}
	return v
}

// switcher lists the user's organizations and, per organization, the
// projects they can open. A failure leaves the switcher empty rather than
// failing the page.
func (r *Request) switcher() []OrgChoice {
	ms, err := r.app.store.ListUserMemberships(r.Context(), r.User.ID)
	if err != nil {
		r.app.logger.Warn("list memberships for the switcher", zap.Error(err))
		return nil
	}
	out := make([]OrgChoice, 0, len(ms))
	for _, m := range ms {
		oc := OrgChoice{ID: m.OrganizationID, Name: m.OrganizationName, Role: m.Role, Current: r.Org != nil && r.Org.ID == m.OrganizationID}
		ps, err := r.app.store.ListProjects(r.Context(), m.OrganizationID)
		if err != nil {
			r.app.logger.Warn("list projects for the switcher", zap.Error(err))
		}
		for _, p := range ps {
			if access.Allows(m.RoleIn(p.ID), access.ProjectRead) {
				oc.Projects = append(oc.Projects, ProjectChoice{ID: p.ID, Name: p.Name, Current: r.Project != nil && r.Project.ID == p.ID})
			}
		}
		out = append(out, oc)
	}
	return out
}

// funcs are the template functions every page may use.
func (a *App) funcs() template.FuncMap {
	return template.FuncMap{
		"path":  a.Path,
		"asset": a.assets.url,
		"query": func(pairs ...string) template.URL {
			// query builds ?k=v&... from pairs, leaving out empty values.
			var b strings.Builder
			for i := 0; i+1 < len(pairs); i += 2 {
				if pairs[i+1] == "" {
					continue
				}
				if b.Len() == 0 {
					b.WriteByte('?')
				} else {
					b.WriteByte('&')
				}
				b.WriteString(queryEscape(pairs[i]) + "=" + queryEscape(pairs[i+1]))
			}
			return template.URL(b.String()) //nolint:gosec // every part is query-escaped
		},
		"ms":       FormatMillis,
		"cost":     FormatCost,
		"num":      FormatInt,
		"float":    FormatFloat,
		"time":     FormatTime,
		"ago":      FormatAgo,
		"json":     prettyJSON,
		"truncate": Truncate,
		"dict":     dict,
		"add":      func(a, b int) int { return a + b },
		"sub":      func(a, b int) int { return a - b },
		"mulf":     func(a, b float64) float64 { return a * b },
		"pct": func(part, whole float64) string {
			if whole <= 0 {
				return "0"
			}
			return strconv.FormatFloat(math.Max(0, math.Min(100, 100*part/whole)), 'f', 2, 64)
		},
		"roles":      access.Roles,
		"csrfField":  func() string { return CSRFField },
		"csrfHeader": func() string { return CSRFHeader },
		"lower":      strings.ToLower,
		"int64":      func(n int) int64 { return int64(n) },
		"float64":    func(n int) float64 { return float64(n) },
		"uint":       func(n uint64) int64 { return int64(min(n, math.MaxInt64)) },
		"micros":     func(us int64) time.Time { return time.UnixMicro(us) },
		"has":        func(vs []string, v string) bool { return slices.Contains(vs, v) },
		"first": func(vs []string) string {
			if len(vs) == 0 {
				return ""
			}
			return vs[0]
		},
	}
}

func queryEscape(s string) string {
	return strings.ReplaceAll(template.URLQueryEscaper(s), "%20", "+")
}

func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict wants key, value pairs")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

func prettyJSON(v any) string {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case string:
		raw = []byte(x)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		raw = b
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

// FormatMillis shows a duration in milliseconds the way people read it:
// 850ms, 1.24s, 3m 05s.
func FormatMillis(ms float64) string {
	switch {
	case ms < 0 || math.IsNaN(ms):
		return "–"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	case ms < 60_000:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + "s"
	case ms < 3_600_000:
		return fmt.Sprintf("%dm %02ds", int(ms/60_000), int(math.Mod(ms, 60_000)/1000))
	}
	return fmt.Sprintf("%dh %02dm", int(ms/3_600_000), int(math.Mod(ms, 3_600_000)/60_000))
}

// FormatCost shows US dollars with enough digits for fractions of a cent.
func FormatCost(usd float64) string {
	switch {
	case usd == 0:
		return "$0"
	case usd < 0.01:
		return "$" + strconv.FormatFloat(usd, 'f', 6, 64)
	case usd < 100:
		return "$" + strconv.FormatFloat(usd, 'f', 4, 64)
	}
	return "$" + FormatFloat(usd)
}

// FormatInt writes an integer with thousands separators.
func FormatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatFloat writes a number with at most two decimals and separators.
func FormatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	whole := math.Trunc(f)
	frac := math.Abs(f - whole)
	s := FormatInt(int64(whole))
	if frac >= 0.005 {
		d := strconv.FormatFloat(frac, 'f', 2, 64)
		s += strings.TrimRight(strings.TrimPrefix(d, "0"), "0")
	}
	return s
}

// FormatTime writes a UTC timestamp; the page's script shows it in local
// time where JavaScript runs.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// FormatAgo says how long ago t was, coarsely.
func FormatAgo(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// Truncate shortens s to n runes, marking the cut.
func Truncate(n int, s string) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
