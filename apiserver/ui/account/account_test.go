package account_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

func TestSignInAndOut(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	c := uitest.NewClient(t, env.URL)

	res := c.Get("/")
	assert.Equal(t, "/auth/sign-in", res.URL.Path, "anonymous visitors are sent to sign in")
	assert.Contains(t, res.Body, "Sign in to Glassbox")
	assert.NotContains(t, res.Body, "Sign up", "sign-up is off by default")

	res = c.Post("/auth/sign-in", url.Values{"email": {env.OwnerEmail}, "password": {"wrong password"}})
	assert.Equal(t, http.StatusUnauthorized, res.Status)
	assert.Contains(t, res.Body, "Wrong email or password.")
	assert.Contains(t, res.Body, `value="owner@example.com"`, "the email is kept")

	res = c.SignIn(strings.ToUpper(env.OwnerEmail), env.OwnerPassword)
	assert.Equal(t, "/project/"+env.ProjectID, res.URL.Path, "lands on the first project")

	res = c.Get("/auth/sign-in")
	assert.Equal(t, "/project/"+env.ProjectID, res.URL.Path, "signed-in people skip the sign-in page")

	// Sign-out ends the session on the server: the old cookie is worthless.
	cookie := sessionCookie(t, c, env.URL)
	res = c.Post("/auth/sign-out", nil)
	assert.Equal(t, "/auth/sign-in", res.URL.Path)
	replay := uitest.NewClient(t, env.URL).NoRedirects()
	res = replay.Do(http.MethodGet, "/project/"+env.ProjectID, nil, http.Header{"Cookie": {"glassbox_session=" + cookie}})
	assert.Equal(t, http.StatusFound, res.Status)
	assert.Equal(t, "/auth/sign-in?next=%2Fproject%2F"+env.ProjectID, res.Header.Get("Location"))
}

func sessionCookie(t *testing.T, c *uitest.Client, base string) string {
	t.Helper()
	res := c.Get("/auth/sign-in")
	require.NotNil(t, res)
	u, _ := url.Parse(base)
	for _, ck := range jarCookies(c, u) {
		if ck.Name == "glassbox_session" {
			return ck.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

func jarCookies(c *uitest.Client, u *url.URL) []*http.Cookie { return c.Cookies(u) }

func TestCookieFlags(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	c := uitest.NewClient(t, env.URL).NoRedirects()
	c.Get("/auth/sign-in")
	res := c.Post("/auth/sign-in", url.Values{"email": {env.OwnerEmail}, "password": {env.OwnerPassword}})
	require.Equal(t, http.StatusSeeOther, res.Status)
	var session *http.Cookie
	for _, ck := range (&http.Response{Header: res.Header}).Cookies() {
		if ck.Name == "glassbox_session" {
			session = ck
		}
	}
	require.NotNil(t, session)
	assert.True(t, session.HttpOnly)
	assert.Equal(t, http.SameSiteLaxMode, session.SameSite)
	assert.False(t, session.Secure, "plain http on loopback")
	assert.Equal(t, "/", session.Path)
	assert.InDelta(t, (7 * 24 * time.Hour).Seconds(), float64(session.MaxAge), 5)

	// Behind an HTTPS proxy the cookie is Secure.
	c2 := uitest.NewClient(t, env.URL).NoRedirects()
	c2.Get("/auth/sign-in")
	res = c2.Do(http.MethodPost, "/auth/sign-in", strings.NewReader(url.Values{"email": {env.OwnerEmail},
		"password": {env.OwnerPassword}, "_csrf": {c2.CSRF()}}.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "X-Forwarded-Proto": {"https"}})
	require.Equal(t, http.StatusSeeOther, res.Status)
	assert.Contains(t, res.Header.Get("Set-Cookie"), "Secure")
}

func TestSecurityHeaders(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	res := uitest.NewClient(t, env.URL).Get("/auth/sign-in")
	csp := res.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self'")
	assert.Contains(t, csp, "style-src 'self'")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.NotContains(t, csp, "unsafe")
	assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
	assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	assert.NotContains(t, res.Body, "<script>", "no inline script")
	assert.NotContains(t, res.Body, "style=", "no inline style")
	assert.NotContains(t, res.Body, "http://", "nothing loads from another host")
	assert.NotContains(t, res.Body, "https://")
}

func TestCSRF(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	form := func(token string) *strings.Reader {
		return strings.NewReader(url.Values{"organization": {"Evil"}, "project": {"p"}, "_csrf": {token}}.Encode())
	}
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}

	res := c.Do(http.MethodPost, "/setup", form(""), h)
	assert.Equal(t, http.StatusForbidden, res.Status, "no token")
	res = c.Do(http.MethodPost, "/setup", form(c.CSRF()+"x"), h)
	assert.Equal(t, http.StatusForbidden, res.Status, "a wrong token")

	// A token made for another browser does not work here.
	other := uitest.NewClient(t, env.URL)
	other.SignIn(env.OwnerEmail, env.OwnerPassword)
	res = c.Do(http.MethodPost, "/setup", form(other.CSRF()), h)
	assert.Equal(t, http.StatusForbidden, res.Status, "another browser's token")

	// A cross-site form post is refused even with a token.
	cross := http.Header{"Content-Type": h["Content-Type"], "Sec-Fetch-Site": {"cross-site"}}
	res = c.Do(http.MethodPost, "/setup", form(c.CSRF()), cross)
	assert.Equal(t, http.StatusForbidden, res.Status, "cross-site")
	assert.Contains(t, res.Body, "did not come from this site")

	ms, err := env.Store.ListUserMemberships(context.Background(), env.Owner.ID)
	require.NoError(t, err)
	assert.Len(t, ms, 1, "no organization was created by the refused posts")

	// The header works as well as the field (htmx sends the header).
	res = c.Do(http.MethodPost, "/setup", strings.NewReader("organization=Good&project=p"),
		http.Header{"Content-Type": h["Content-Type"], "X-CSRF-Token": {c.CSRF()}})
	assert.Equal(t, http.StatusOK, res.Status, res.Body)
}

func TestSignInRateLimit(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	c := uitest.NewClient(t, env.URL)
	c.Get("/auth/sign-in")
	for i := range 10 {
		res := c.Post("/auth/sign-in", url.Values{"email": {env.OwnerEmail}, "password": {"guess " + string(rune('a'+i))}})
		require.Equal(t, http.StatusUnauthorized, res.Status, "attempt %d", i+1)
	}
	res := c.Post("/auth/sign-in", url.Values{"email": {env.OwnerEmail}, "password": {env.OwnerPassword}})
	assert.Equal(t, http.StatusTooManyRequests, res.Status, "even the right password waits now")
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	assert.Contains(t, res.Body, "Too many sign-in attempts")

	// Other accounts are not locked by it.
	env.AddMember(t, "other@example.com", controlplane.RoleViewer)
	uitest.NewClient(t, env.URL).SignIn("other@example.com", uitest.MemberPassword)
}

func TestNextStaysOnThisSite(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	for next, want := range map[string]string{
		"/project/" + env.ProjectID + "/traces": "/project/" + env.ProjectID + "/traces",
		"https://evil.example/":                 "/project/" + env.ProjectID,
		"//evil.example/":                       "/project/" + env.ProjectID,
		"/\\evil.example":                       "/project/" + env.ProjectID,
	} {
		c := uitest.NewClient(t, env.URL).NoRedirects()
		c.Get("/auth/sign-in")
		res := c.Post("/auth/sign-in", url.Values{"email": {env.OwnerEmail}, "password": {env.OwnerPassword}, "next": {next}})
		assert.Equal(t, want, res.Header.Get("Location"), "next=%s", next)
	}
}

func TestSignUp(t *testing.T) {
	closed := uitest.Start(t, uitest.Options{})
	c := uitest.NewClient(t, closed.URL)
	assert.Equal(t, http.StatusNotFound, c.Get("/auth/sign-up").Status)
	c.Get("/auth/sign-in")
	res := c.Post("/auth/sign-up", url.Values{"email": {"new@example.com"}, "password": {"long enough"}})
	assert.Equal(t, http.StatusNotFound, res.Status)

	open := uitest.Start(t, uitest.Options{Configure: func(cfg *apiserver.Config) { cfg.UI.SignUp = true }})
	c = uitest.NewClient(t, open.URL)
	assert.Contains(t, c.Get("/auth/sign-in").Body, "Sign up")
	c.Get("/auth/sign-up")
	res = c.Post("/auth/sign-up", url.Values{"email": {"new@example.com"}, "password": {"short"}})
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "Password must have at least 8 characters.")
	res = c.Post("/auth/sign-up", url.Values{"email": {open.OwnerEmail}, "password": {"long enough"}})
	assert.Equal(t, http.StatusConflict, res.Status)
	res = c.Post("/auth/sign-up", url.Values{"name": {"Nia"}, "email": {"new@example.com"}, "password": {"long enough"}})
	require.Equal(t, "/setup", res.URL.Path)
	assert.Contains(t, res.Body, "Set up Glassbox")

	res = c.Post("/setup", url.Values{"organization": {"Nia's org"}, "project": {"First"}})
	require.True(t, strings.HasPrefix(res.URL.Path, "/project/"), res.URL.Path)
	u, err := open.Store.GetUserByEmail(context.Background(), "new@example.com")
	require.NoError(t, err)
	ms, err := open.Store.ListUserMemberships(context.Background(), u.ID)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, controlplane.RoleOwner, ms[0].Role)
	assert.Equal(t, "Nia's org", ms[0].OrganizationName)
}

func TestInvitationLink(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	ctx := context.Background()
	u, needsLink, err := env.Store.InviteMember(ctx, env.OrgID, "invitee@example.com", "", controlplane.RoleMember)
	require.NoError(t, err)
	require.True(t, needsLink)
	token, err := env.Store.CreateInviteLink(ctx, u.ID, time.Hour)
	require.NoError(t, err)

	c := uitest.NewClient(t, env.URL)
	res := c.Get("/auth/invite/" + token)
	assert.Contains(t, res.Body, "invitee@example.com")
	res = c.Post("/auth/invite/"+token, url.Values{"name": {"Ina"}, "password": {"invitee password"}})
	assert.Equal(t, "/project/"+env.ProjectID, res.URL.Path, "signed in and on the project")
	assert.Equal(t, http.StatusNotFound, c.Get("/auth/invite/"+token).Status, "a link works once")
	uitest.NewClient(t, env.URL).SignIn("invitee@example.com", "invitee password")
}

func TestBasePath(t *testing.T) {
	env := uitest.Start(t, uitest.Options{BasePath: "/glassbox"})
	c := uitest.NewClient(t, env.URL)
	res := c.Get("/")
	assert.Equal(t, "/glassbox/auth/sign-in", res.URL.Path)
	assert.Contains(t, res.Body, `action="/glassbox/auth/sign-in"`)
	assert.Regexp(t, `href="/glassbox/static/app\.[0-9a-f]+\.css"`, res.Body)
	assert.Contains(t, res.Header.Get("Set-Cookie"), "Path=/glassbox/", "cookies stay below the prefix")
	res = c.SignIn(env.OwnerEmail, env.OwnerPassword)
	assert.Equal(t, "/glassbox/project/"+env.ProjectID, res.URL.Path)
	// The API answers below the prefix too.
	res = c.Get("/api/public/health")
	assert.Equal(t, http.StatusOK, res.Status, res.Body)
}
