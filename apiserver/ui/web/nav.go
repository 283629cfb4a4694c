package web

import (
	"slices"
	"strings"

	"github.com/glassbox-dev/glassbox/internal/access"
)

// NavItem is an entry of a project's sidebar. Page packages add theirs; the
// layout shows only the entries the role may open.
type NavItem struct {
	// Section groups entries under a heading ("" is the top group).
	Section string
	Label   string
	// Path is below /project/{projectId}; "" is the project's home.
	Path   string
	Action access.Action
	// Order sorts entries inside a section, and sections by their first entry.
	Order int
}

// NavSection is one heading of the sidebar with its links.
type NavSection struct {
	Title string
	Links []NavLink
}

// NavLink is a sidebar entry as rendered.
type NavLink struct {
	Label, Href string
	Active      bool
}

// AddNav adds sidebar entries.
func (a *App) AddNav(items ...NavItem) {
	a.nav = append(a.nav, items...)
	slices.SortStableFunc(a.nav, func(x, y NavItem) int { return x.Order - y.Order })
}

func (a *App) navFor(r *Request) []NavSection {
	var out []NavSection
	index := map[string]int{}
	here := strings.TrimPrefix(r.URL.Path, "/project/"+r.Project.ID)
	for _, it := range a.nav {
		if !r.Can(it.Action) {
			continue
		}
		link := NavLink{Label: it.Label, Href: a.Path("project", r.Project.ID)}
		if it.Path != "" {
			link.Href += "/" + it.Path
			link.Active = here == "/"+it.Path || strings.HasPrefix(here, "/"+it.Path+"/")
		} else {
			link.Active = here == "" || here == "/"
		}
		i, ok := index[it.Section]
		if !ok {
			i = len(out)
			index[it.Section] = i
			out = append(out, NavSection{Title: it.Section})
		}
		out[i].Links = append(out[i].Links, link)
	}
	return out
}

// Tab is an entry of a page's own tab bar (the "tabs" partial).
type Tab struct {
	Label, Href string
	Active      bool
}
