// Package prompts serves the prompt pages: the list of a project's prompts
// by folder, a prompt's page (its versions with their labels, the chosen
// version's content, config and commit message, a diff against another
// version, its references resolved, and each version's usage from the
// metrics engine), the editor that saves a new version, and the label
// moves, where production is protected.
package prompts // import "github.com/glassbox-dev/glassbox/apiserver/ui/prompts"

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/comments"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

// Store reads and writes prompts; *controlplane.Store implements it.
type Store interface {
	comments.Store
	ListPrompts(ctx context.Context, projectID string, f controlplane.PromptFilter) ([]controlplane.PromptSummary, int, error)
	GetPrompt(ctx context.Context, projectID, name string, sel controlplane.PromptSelector) (controlplane.Prompt, error)
	ResolvePrompt(ctx context.Context, projectID, name string, sel controlplane.PromptSelector) (controlplane.Prompt, error)
	PreviewPrompt(ctx context.Context, projectID string, np controlplane.NewPrompt) (controlplane.Prompt, error)
	CreatePrompt(ctx context.Context, projectID string, np controlplane.NewPrompt) (controlplane.Prompt, error)
	SetPromptLabels(ctx context.Context, projectID, name string, version int, labels []string) (controlplane.Prompt, error)
	RemovePromptLabel(ctx context.Context, projectID, name, label string) error
}

// Metrics runs metrics-engine queries; *chstore.Store implements it.
type Metrics interface {
	Metrics(ctx context.Context, projectID string, q chstore.MetricsQuery) ([]map[string]any, error)
}

type handlers struct {
	store   Store
	metrics Metrics
	t       *web.Templates
	now     func() time.Time
}

// Routes registers the prompt pages and their sidebar entry.
func Routes(app *web.App, store Store, metrics Metrics) error {
	t, err := app.Parse(pages, "prompts.html", "prompt.html", "editor.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, metrics: metrics, t: t, now: time.Now}
	app.AddNav(web.NavItem{Section: "Prompt management", Label: "Prompts", Path: "prompts", Action: access.ProjectRead, Order: 200})
	base := "/project/{projectId}/prompts"
	return app.Handle(
		web.InProjectRoute(http.MethodGet, base, access.ProjectRead, h.list),
		web.InProjectRoute(http.MethodGet, base+"/new", access.PromptsWrite, h.editor),
		web.InProjectRoute(http.MethodPost, base+"/new", access.PromptsWrite, h.save),
		// Names hold slashes (folders), so the name is the rest of the path.
		web.InProjectRoute(http.MethodGet, base+"/{name...}", access.ProjectRead, h.prompt),
		// The label forms name the prompt in the body for the same reason;
		// production needs more than the route's action, checked inside.
		web.InProjectRoute(http.MethodPost, "/project/{projectId}/prompt-labels", access.PromptsWrite, h.addLabel),
		web.InProjectRoute(http.MethodPost, "/project/{projectId}/prompt-labels/remove", access.PromptsWrite, h.removeLabel),
	)
}

// maxListed bounds the prompts a list page reads; folders group them.
const maxListed = 1000

type entry struct {
	// Folder is set for a folder row: the names below it are counted.
	Folder   string
	Prompts  int
	Name     string // the full name of a prompt row
	Short    string // the name below the current folder
	Href     string
	Type     string
	Versions int
	Labels   []string
	Tags     []string
	Updated  string
}

type listData struct {
	Folder  string
	Parents []crumb
	Entries []entry
	Query   string
	Total   int
	Capped  bool
}

type crumb struct{ Label, Folder string }

// list shows the prompts of the current folder (`folder=a/b`) and its
// sub-folders, as Langfuse groups names by their slashes; a search looks
// through every folder.
func (h *handlers) list(r *web.Request) error {
	q := r.URL.Query()
	folder := strings.Trim(q.Get("folder"), "/")
	search := strings.TrimSpace(q.Get("q"))
	all, total, err := h.store.ListPrompts(r.Context(), r.Project.ID, controlplane.PromptFilter{Limit: maxListed})
	if err != nil {
		return err
	}
	d := listData{Folder: folder, Query: search, Total: total, Capped: total > len(all), Parents: crumbs(folder)}
	prefix := ""
	if folder != "" {
		prefix = folder + "/"
	}
	folders := map[string]int{}
	for _, p := range all {
		if !strings.HasPrefix(p.Name, prefix) || (search != "" && !strings.Contains(strings.ToLower(p.Name), strings.ToLower(search))) {
			continue
		}
		rest := strings.TrimPrefix(p.Name, prefix)
		if sub, _, nested := strings.Cut(rest, "/"); nested && search == "" {
			folders[sub]++
			continue
		}
		d.Entries = append(d.Entries, entry{Name: p.Name, Short: rest, Href: h.promptPath(r, p.Name), Type: p.Type,
			Versions: len(p.Versions), Labels: p.Labels, Tags: p.Tags, Updated: web.FormatAgo(p.LastUpdatedAt)})
	}
	dirs := make([]entry, 0, len(folders))
	for f, n := range folders {
		dirs = append(dirs, entry{Folder: prefix + f, Short: f, Prompts: n})
	}
	slices.SortFunc(dirs, func(a, b entry) int { return strings.Compare(a.Short, b.Short) })
	d.Entries = append(dirs, d.Entries...)
	return r.Render(h.t, "prompts", d)
}

// crumbs are the folders of a path, each with its full path.
func crumbs(folder string) []crumb {
	if folder == "" {
		return nil
	}
	parts := strings.Split(folder, "/")
	out := make([]crumb, len(parts))
	for i := range parts {
		out[i] = crumb{Label: parts[i], Folder: strings.Join(parts[:i+1], "/")}
	}
	return out
}

// promptPath is a prompt's page; its name's slashes stay path separators.
func (h *handlers) promptPath(r *web.Request, name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return r.Path("project", r.Project.ID, "prompts") + "/" + strings.Join(parts, "/")
}

type version struct {
	Number  int
	Labels  []string
	Href    string
	Current bool
}

type promptData struct {
	Prompt   controlplane.Prompt
	Self     string
	Versions []version
	Content  content
	// Resolved is the content with its references replaced, when the
	// version has references and the page was asked to resolve them.
	Resolved   *content
	References bool
	Variables  []string
	// Compare is the version diffed against, 0 for none.
	Compare int
	Diff    []diffLine
	Usage   []usageRow
	Scores  []string // the score names of the usage table's columns
	Range   web.TimeRange
	// UsageError says why usage could not be read (ClickHouse down).
	UsageError string
	// UsageLoaded is set when the usage was read for this response;
	// otherwise UsageURL loads the section and UsageInline is the page
	// with it, for browsers without scripts.
	UsageLoaded           bool
	UsageURL, UsageInline string
	// PageQuery is the page's query, which the time-range form keeps.
	PageQuery url.Values
	Folders   []crumb
	// Removable are the labels this person may take off the version.
	Removable map[string]bool
	// Comments are the version's.
	Comments *comments.Thread
}

// content is a version's prompt as the page shows it.
type content struct {
	Text     string
	Messages []controlplane.ChatMessage
	Config   string
}

func contentOf(p controlplane.Prompt) content {
	var c content
	if p.Type == controlplane.PromptChat {
		_ = json.Unmarshal(p.Prompt, &c.Messages)
	} else {
		_ = json.Unmarshal(p.Prompt, &c.Text)
	}
	if cfg := strings.TrimSpace(string(p.Config)); cfg != "" && cfg != "{}" && cfg != "null" {
		var v any
		if json.Unmarshal(p.Config, &v) == nil {
			out, _ := json.MarshalIndent(v, "", "  ")
			c.Config = string(out)
		}
	}
	return c
}

// lines are what a diff compares: the text, or each message under its
// role, then the config.
func (c content) lines() []string {
	var out []string
	if c.Messages == nil {
		out = strings.Split(c.Text, "\n")
	}
	for _, m := range c.Messages {
		if m.Type == "placeholder" {
			out = append(out, "[placeholder "+m.Name+"]")
			continue
		}
		out = append(out, "["+m.Role+"]")
		out = append(out, strings.Split(m.Content, "\n")...)
	}
	if c.Config != "" {
		out = append(out, "", "[config]")
		out = append(out, strings.Split(c.Config, "\n")...)
	}
	return out
}

func (c content) texts() []string {
	if c.Messages == nil {
		return []string{c.Text}
	}
	out := make([]string, 0, len(c.Messages))
	for _, m := range c.Messages {
		out = append(out, m.Content)
	}
	return out
}

// referenceTag starts a composition reference in prompt text.
const referenceTag = "@@@langfusePrompt:"

// prompt shows one version (`version=`, else `label=`, else the production
// label's, else the latest), with `compare=` a diff from that version and
// with `resolved=1` its references resolved.
func (h *handlers) prompt(r *web.Request) error {
	name := r.PathValue("name")
	q := r.URL.Query()
	sel := controlplane.PromptSelector{Label: q.Get("label")}
	if v, err := strconv.Atoi(q.Get("version")); err == nil && v > 0 {
		sel = controlplane.PromptSelector{Version: v}
	}
	if sel.Label == "" && sel.Version == 0 {
		sel.Label = controlplane.LabelProduction
	}
	p, err := h.store.GetPrompt(r.Context(), r.Project.ID, name, sel)
	if errors.Is(err, controlplane.ErrNotFound) && sel.Label == controlplane.LabelProduction && q.Get("label") == "" {
		p, err = h.store.GetPrompt(r.Context(), r.Project.ID, name, controlplane.PromptSelector{Label: controlplane.LabelLatest})
	}
	if errors.Is(err, controlplane.ErrNotFound) {
		return &web.Error{Status: http.StatusNotFound, Message: "This project has no prompt " + name + " with that version or label."}
	}
	if err != nil {
		return err
	}
	summaries, _, err := h.store.ListPrompts(r.Context(), r.Project.ID, controlplane.PromptFilter{Name: name, Limit: 1})
	if err != nil {
		return err
	}
	d := promptData{Prompt: p, Self: h.promptPath(r, name), Content: contentOf(p), Removable: map[string]bool{}}
	if len(summaries) == 1 {
		for _, n := range slices.Backward(summaries[0].Versions) {
			d.Versions = append(d.Versions, version{Number: n, Href: d.Self + "?version=" + strconv.Itoa(n), Current: n == p.Version,
				Labels: summaries[0].VersionLabels[n]})
		}
	}
	if folder, _, ok := cutLast(name, "/"); ok {
		d.Folders = crumbs(folder)
	}
	for _, l := range p.Labels {
		d.Removable[l] = l != controlplane.LabelLatest && r.Can(access.PromptLabelAction(l))
	}
	for _, t := range d.Content.texts() {
		d.References = d.References || strings.Contains(t, referenceTag)
		for _, v := range controlplane.PromptVariables(t) {
			if !slices.Contains(d.Variables, v) {
				d.Variables = append(d.Variables, v)
			}
		}
	}
	if d.References && q.Get("resolved") == "1" {
		resolved, err := h.store.ResolvePrompt(r.Context(), r.Project.ID, name, controlplane.PromptSelector{Version: p.Version})
		if err != nil {
			return err
		}
		c := contentOf(resolved)
		d.Resolved = &c
	}
	if v, err := strconv.Atoi(q.Get("compare")); err == nil && v > 0 && v != p.Version {
		other, err := h.store.GetPrompt(r.Context(), r.Project.ID, name, controlplane.PromptSelector{Version: v})
		if errors.Is(err, controlplane.ErrNotFound) {
			return &web.Error{Status: http.StatusNotFound, Message: fmt.Sprintf("Prompt %s has no version %d to compare with.", name, v)}
		}
		if err != nil {
			return err
		}
		d.Compare, d.Diff = v, diffLines(contentOf(other).lines(), d.Content.lines())
	}
	if d.Comments, err = comments.Load(r, h.store, controlplane.ObjectPrompt, p.ID, d.Self+"?version="+strconv.Itoa(p.Version)); err != nil {
		return err
	}
	d.Range = web.ReadTimeRange(q, "30d", h.now())
	// Usage is a metrics query over the range's generations: the page
	// loads it after it is shown (`part=usage` answers the section alone),
	// or inline with `usage=1` for browsers without scripts.
	part := q.Get("part") == "usage"
	d.PageQuery = url.Values{}
	for k, vs := range q {
		if k != "part" && k != "usage" {
			d.PageQuery[k] = vs
		}
	}
	if part || q.Get("usage") == "1" {
		d.UsageLoaded = true
		if err := h.readUsage(r, name, &d); err != nil {
			if !errors.Is(err, chstore.ErrUnavailable) {
				return err
			}
			d.UsageError = "Usage cannot be read now: " + err.Error()
		}
	}
	if part {
		return r.RenderFragment(h.t, "prompt", "usage", d)
	}
	q.Set("part", "usage")
	d.UsageURL = d.Self + "?" + q.Encode()
	q.Del("part")
	q.Set("usage", "1")
	d.UsageInline = d.Self + "?" + q.Encode()
	return r.Render(h.t, "prompt", d)
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
