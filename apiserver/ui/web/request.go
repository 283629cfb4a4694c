package web

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Request is one UI request after the foundation has read its session and
// checked its access: handlers find the user, the organization, the project
// and the role here, already verified.
type Request struct {
	*http.Request
	w   http.ResponseWriter
	app *App

	User       *controlplane.User         // nil on public routes when nobody is signed in
	Org        *controlplane.Organization // set on project and organization routes
	Project    *controlplane.Project      // set on project routes
	Membership *controlplane.Membership   // the user's membership of Org
	Role       controlplane.Role          // the role that counts here: the project role on project routes

	sessionToken string
	csrfSecret   string // set when this response gives the browser a new secret
}

// Can reports whether the user's role here allows action; templates use it
// to show only the controls that will work.
func (r *Request) Can(action access.Action) bool {
	return r.Role != "" && access.Allows(r.Role, action)
}

// App is the application serving the request.
func (r *Request) App() *App { return r.app }

// Writer is the response writer, for handlers that stream (downloads).
func (r *Request) Writer() http.ResponseWriter { return r.w }

// HTMX reports a request made by htmx, which wants a fragment, not a page.
func (r *Request) HTMX() bool {
	return r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-Boosted") != "true"
}

// Path joins the base path and the segments, escaping each: Path("project",
// id, "traces") is /base/project/<id>/traces.
func (r *Request) Path(segments ...string) string {
	return r.app.Path(segments...)
}

// Path joins the base path and the segments, escaping each.
func (a *App) Path(segments ...string) string {
	var b strings.Builder
	b.WriteString(a.cfg.BasePath)
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// Redirect sends the browser to a path of this UI (htmx follows it too);
// after a form post it is a 303, so a reload does not post again.
func (r *Request) Redirect(path string) error {
	if r.HTMX() {
		r.w.Header().Set("HX-Redirect", path)
		r.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	status := http.StatusFound
	if r.Method != http.MethodGet {
		status = http.StatusSeeOther
	}
	http.Redirect(r.w, r.Request, path, status)
	return nil
}

// Render writes a page: the layout with the page's content, or only the
// named fragment for htmx requests when fragment is not empty.
func (r *Request) Render(t *Templates, page string, data any) error {
	return r.RenderStatus(http.StatusOK, t, page, data)
}

// RenderStatus is Render with a status code (422 for a form with errors).
func (r *Request) RenderStatus(status int, t *Templates, page string, data any) error {
	var buf bytes.Buffer
	if err := t.execute(&buf, page, r.view(data)); err != nil {
		return err
	}
	return r.write(status, "text/html; charset=utf-8", buf.Bytes())
}

// RenderFragment writes one template of a page without the layout, for
// htmx swaps.
func (r *Request) RenderFragment(t *Templates, page, name string, data any) error {
	var buf bytes.Buffer
	if err := t.fragment(&buf, page, name, r.view(data)); err != nil {
		return err
	}
	return r.write(http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}

// JSON writes a JSON body (the UI's own small endpoints: chart data, polls).
func (r *Request) JSON(body []byte) error {
	return r.write(http.StatusOK, "application/json; charset=utf-8", body)
}

// gzipMin is the size from which answers are compressed: a trace of
// thousands of observations is megabytes of markup and data otherwise.
const gzipMin = 1400

func (r *Request) write(status int, contentType string, body []byte) error {
	h := r.w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "HX-Request, Cookie, Accept-Encoding")
	if len(body) >= gzipMin && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		_, _ = zw.Write(body)
		if zw.Close() == nil {
			h.Set("Content-Encoding", "gzip")
			body = buf.Bytes()
		}
	}
	r.w.WriteHeader(status)
	// A write error means the browser went away; nothing to tell it.
	_, _ = r.w.Write(body)
	return nil
}

// Error is an error the person sees, with the status it is served with.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errors handlers return; anything else is logged and shown as a 500.
var (
	ErrNotFound     = &Error{Status: http.StatusNotFound, Message: "This page does not exist, or you have no access to it."}
	ErrForbidden    = &Error{Status: http.StatusForbidden, Message: "Your role does not allow this. Ask an owner or admin of the organization."}
	errSignInNeeded = &Error{Status: http.StatusUnauthorized, Message: "Please sign in."}
	errInternal     = &Error{Status: http.StatusInternalServerError, Message: "Something went wrong on our side. Try again; if it persists, the server log says what failed."}
	errClickHouse   = &Error{Status: http.StatusServiceUnavailable, Message: "The trace store (ClickHouse) is unavailable right now. Settings, prompts and datasets still work; try this page again shortly."}
)

// BadRequest is a 400 with a message for the person.
func BadRequest(format string, args ...any) error {
	return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// verdict is what the person is told of a handler's error. The stores'
// verdicts get the API's status (httpx.ClientError, the one mapping: not
// found 404, invalid 400, conflict 409, ClickHouse down 503), in the UI's
// words where it has its own; ok is false when the client went away.
func (r *Request) verdict(err error) (e *Error, ok bool) {
	if errors.As(err, &e) {
		return e, true
	}
	if errors.Is(err, access.ErrDenied) {
		return &Error{Status: http.StatusForbidden, Message: err.Error()}, true
	}
	v, known := httpx.ClientError(err)
	switch {
	case !known && r.Context().Err() != nil:
		return nil, false
	case !known:
		r.app.logger.Error("UI request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		return errInternal, true
	case errors.Is(err, chstore.ErrUnavailable):
		r.app.logger.Warn("ClickHouse is unavailable", zap.String("path", r.URL.Path), zap.Error(err))
		return errClickHouse, true
	case v.Status == http.StatusNotFound:
		return ErrNotFound, true
	}
	// The store's message names the field, filter or name to change.
	return &Error{Status: v.Status, Message: v.Message}, true
}

// fail answers a request whose handler or check failed: a sign-in redirect
// for anonymous page views, else an error page (or fragment) with the
// status.
func (r *Request) fail(err error) {
	e, ok := r.verdict(err)
	if !ok {
		return
	}
	if e == errSignInNeeded {
		next := r.app.cfg.BasePath + r.URL.RequestURI()
		target := r.Path("auth", "sign-in") + "?next=" + url.QueryEscape(next)
		if r.Method == http.MethodGet && !r.HTMX() {
			http.Redirect(r.w, r.Request, target, http.StatusFound)
			return
		}
		r.w.Header().Set("HX-Redirect", target)
	}
	if r.HTMX() {
		r.w.Header().Set("HX-Reswap", "none")
		r.w.Header().Set("HX-Trigger", fmt.Sprintf(`{"gb-error":%q}`, e.Message))
	}
	if rerr := r.RenderStatus(e.Status, r.app.layout, "error", e); rerr != nil {
		r.app.logger.Error("render error page", zap.Error(rerr))
		http.Error(r.w, e.Message, e.Status)
	}
}

// SignIn starts a session for the user and sets its cookie.
func (r *Request) SignIn(user controlplane.User) error {
	if r.sessionToken != "" {
		_ = r.app.store.DeleteSession(r.Context(), r.sessionToken)
	}
	token, sess, err := r.app.store.CreateSession(r.Context(), user.ID, r.app.cfg.SessionTTL)
	if err != nil {
		return err
	}
	r.setCookie(sessionCookie, token, sess.ExpiresAt)
	r.sessionToken, r.User = token, &user
	// A new session gets a new CSRF secret, so a token seen before sign-in
	// is worth nothing after it.
	r.app.csrf.rotate(r)
	return nil
}

// SignOut ends the session.
func (r *Request) SignOut() error {
	if r.sessionToken != "" {
		if err := r.app.store.DeleteSession(r.Context(), r.sessionToken); err != nil {
			return err
		}
	}
	r.clearCookie(sessionCookie)
	r.sessionToken, r.User = "", nil
	return nil
}

// ClientIP is the address the request came from, for rate limits; the
// proxy's X-Forwarded-For is not trusted, since anyone can send one.
func (r *Request) ClientIP() string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	return strings.Trim(host, "[]")
}

// StoreRefusal is what a form shows when the control plane refused its
// input (invalid, conflicting, or naming something that does not exist):
// the store's message without its verdict's prefix, with the API's status
// for the verdict (httpx.ClientError). It is nil for errors of other kinds,
// which go to the error page.
func StoreRefusal(err error) *Error {
	for _, kind := range []error{controlplane.ErrInvalid, controlplane.ErrConflict, controlplane.ErrNotFound} {
		if errors.Is(err, kind) {
			v, _ := httpx.ClientError(err)
			msg := err.Error()
			if i := strings.LastIndex(msg, kind.Error()+": "); i >= 0 {
				msg = msg[i+len(kind.Error())+2:]
			}
			return &Error{Status: v.Status, Message: msg}
		}
	}
	return nil
}
