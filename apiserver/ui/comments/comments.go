// Package comments serves the comment threads of the UI: the comments on a
// trace, an observation, a session or a prompt version, shown where those
// are shown, with a form to add one and a way to delete one's own. Pages
// load a thread with Load and render it with the "comments" template.
package comments // import "github.com/glassbox-dev/glassbox/apiserver/ui/comments"

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store keeps comments and names their authors; *controlplane.Store
// implements it.
type Store interface {
	CreateComment(ctx context.Context, projectID string, n controlplane.NewComment) (controlplane.Comment, error)
	ListComments(ctx context.Context, projectID string, f controlplane.CommentFilter) ([]controlplane.Comment, int, error)
	DeleteComment(ctx context.Context, projectID, id, authorUserID string) error
	ListMembers(ctx context.Context, orgID string) ([]controlplane.Membership, error)
}

// Thread is the comments on one object, as the "comments" template shows
// them.
type Thread struct {
	Type, ObjectID string
	Comments       []Entry
	// Back is the page the forms return to.
	Back string
	// CanWrite shows the form: people who may score may comment.
	CanWrite bool
	Capped   bool
}

// Entry is one comment with its author's name.
type Entry struct {
	controlplane.Comment
	Author string
	Mine   bool
}

// maxShown bounds the comments a thread shows.
const maxShown = 200

// Load reads the thread of an object for a page at back.
func Load(r *web.Request, store Store, objectType, objectID, back string) (*Thread, error) {
	list, total, err := store.ListComments(r.Context(), r.Project.ID, controlplane.CommentFilter{ObjectType: objectType, ObjectID: objectID, Limit: maxShown})
	if err != nil {
		return nil, err
	}
	t := &Thread{Type: objectType, ObjectID: objectID, Back: back, CanWrite: r.Can(access.ScoresWrite), Capped: total > len(list)}
	if len(list) == 0 {
		return t, nil
	}
	members, err := store.ListMembers(r.Context(), r.Org.ID)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, m := range members {
		names[m.UserID] = m.Email
	}
	for _, c := range list {
		author := names[c.AuthorUserID]
		if author == "" {
			author = "API"
			if c.AuthorUserID != "" {
				author = c.AuthorUserID
			}
		}
		t.Comments = append(t.Comments, Entry{Comment: c, Author: author, Mine: c.AuthorUserID == r.User.ID})
	}
	return t, nil
}

type handlers struct{ store Store }

// Routes registers the comment forms.
func Routes(app *web.App, store Store) error {
	h := handlers{store: store}
	return app.Handle(
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/comments", Access: web.InProject, Action: access.ScoresWrite, Handler: h.create},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/comments/{commentId}/delete", Access: web.InProject, Action: access.ScoresWrite, Handler: h.delete},
	)
}

// back is the page a form came from when it is a page of this project,
// else the project's home: a form cannot send people elsewhere.
func back(r *web.Request) string {
	home := r.Path("project", r.Project.ID)
	b := r.PostFormValue("back")
	if u, err := url.Parse(b); err == nil && u.Host == "" && u.Scheme == "" && strings.HasPrefix(u.Path, home+"/") && !strings.Contains(u.Path, "//") {
		return b
	}
	return home
}

func (h handlers) create(r *web.Request) error {
	_, err := h.store.CreateComment(r.Context(), r.Project.ID, controlplane.NewComment{ObjectType: r.PostFormValue("object_type"),
		ObjectID: r.PostFormValue("object_id"), Content: r.PostFormValue("content"), AuthorUserID: r.User.ID})
	if refusal := web.StoreRefusal(err); refusal != nil {
		return refusal
	}
	if err != nil {
		return err
	}
	return r.Redirect(back(r))
}

// delete removes one of the person's own comments.
func (h handlers) delete(r *web.Request) error {
	err := h.store.DeleteComment(r.Context(), r.Project.ID, r.PathValue("commentId"), r.User.ID)
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	return r.Redirect(back(r))
}
