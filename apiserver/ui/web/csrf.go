package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"
)

// Every state-changing request carries a CSRF token: forms in a hidden
// `_csrf` field, htmx calls in the X-CSRF-Token header (set once on <body>).
// The token is an HMAC, under a server key, of a random secret that lives
// in an HttpOnly cookie and of the session token, so a token is good only
// in the browser it was made for and only for the session it was made in;
// another site can neither read it nor make one. Go's cross-origin
// protection (Sec-Fetch-Site / Origin) refuses cross-site posts as well.

const (
	csrfCookie    = "glassbox_csrf"
	sessionCookie = "glassbox_session"
	// CSRFField is the form field that carries the token.
	CSRFField = "_csrf"
	// CSRFHeader is the header htmx sends it in.
	CSRFHeader = "X-CSRF-Token"
)

var errCSRF = &Error{Status: http.StatusForbidden, Message: "This form has expired or did not come from this site. Reload the page and try again."}

type csrf struct {
	key    []byte
	origin *http.CrossOriginProtection
}

func newCSRF(key []byte) *csrf {
	return &csrf{key: key, origin: http.NewCrossOriginProtection()}
}

// token returns the request's CSRF token, giving the browser a secret
// first if it has none.
func (c *csrf) token(r *Request) string {
	secret := ""
	if ck, err := r.Cookie(csrfCookie); err == nil {
		secret = ck.Value
	}
	if r.csrfSecret != "" {
		secret = r.csrfSecret
	}
	if len(secret) < 32 {
		secret = c.newSecret(r)
	}
	return c.mac(secret, r.sessionToken)
}

func (c *csrf) newSecret(r *Request) string {
	buf := make([]byte, 32)
	_, _ = rand.Read(buf)
	secret := base64.RawURLEncoding.EncodeToString(buf)
	r.setCookie(csrfCookie, secret, time.Time{})
	r.csrfSecret = secret
	return secret
}

// rotate gives the browser a new secret (at sign-in).
func (c *csrf) rotate(r *Request) { c.newSecret(r) }

func (c *csrf) mac(secret, session string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(secret))
	m.Write([]byte{0})
	m.Write([]byte(session))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// check accepts a state-changing request only with the right token, from
// this site.
func (c *csrf) check(r *Request) error {
	if err := c.origin.Check(r.Request); err != nil {
		return errCSRF
	}
	ck, err := r.Cookie(csrfCookie)
	if err != nil || len(ck.Value) < 32 {
		return errCSRF
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		got = r.PostFormValue(CSRFField)
	}
	want := c.mac(ck.Value, r.sessionToken)
	if got == "" || !hmac.Equal([]byte(got), []byte(want)) {
		return errCSRF
	}
	return nil
}

// CSRFToken is the token forms and htmx calls of this page must carry.
func (r *Request) CSRFToken() string {
	return r.app.csrf.token(r)
}

// setCookie sets an HttpOnly, SameSite=Lax cookie scoped to the base path;
// Secure when configured or when the request came over HTTPS. A zero expiry
// makes a browser-session cookie.
func (r *Request) setCookie(name, value string, expires time.Time) {
	c := &http.Cookie{ //nolint:gosec // HttpOnly, SameSite=Lax, and Secure whenever the request or the configuration is HTTPS
		Name:     name,
		Value:    value,
		Path:     r.cookiePath(),
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
		Secure:   r.secure(),
	}
	if !expires.IsZero() {
		c.Expires = expires
		c.MaxAge = int(time.Until(expires).Seconds())
	}
	http.SetCookie(r.w, c)
}

func (r *Request) clearCookie(name string) {
	http.SetCookie(r.w, &http.Cookie{Name: name, Value: "", Path: r.cookiePath(), MaxAge: -1, //nolint:gosec // as setCookie
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.secure()})
}

func (r *Request) cookiePath() string {
	if r.app.cfg.BasePath == "" {
		return "/"
	}
	return r.app.cfg.BasePath + "/"
}

// secure reports whether cookies must be Secure. A proxy's word is taken
// here: a wrong "https" only withholds the cookie from plain HTTP.
func (r *Request) secure() bool {
	return r.app.cfg.SecureCookies || r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// SetCookie sets a short-lived HttpOnly cookie of the UI (an SSO flow's
// state); ClearCookie removes it.
func (r *Request) SetCookie(name, value string, ttl time.Duration) {
	r.setCookie(name, value, time.Now().Add(ttl))
}

// ClearCookie removes a cookie set with SetCookie.
func (r *Request) ClearCookie(name string) { r.clearCookie(name) }
