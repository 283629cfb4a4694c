package uitest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Client is a browser without JavaScript: it keeps cookies, follows
// redirects, and posts forms with the CSRF token of the last page it read.
type Client struct {
	t    testing.TB
	base string
	http *http.Client
	csrf string
}

// Response is a page as the client received it.
type Response struct {
	Status int
	URL    *url.URL // after redirects
	Header http.Header
	Body   string
}

// NewClient returns a client with no cookies for the server at base.
func NewClient(t testing.TB, base string) *Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &Client{t: t, base: base, http: &http.Client{Jar: jar}}
}

// NoRedirects makes the client stop at redirects, to assert on them.
func (c *Client) NoRedirects() *Client {
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

var csrfInput = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// Get reads a page; path is below the base URL.
func (c *Client) Get(path string) *Response {
	c.t.Helper()
	return c.Do(http.MethodGet, path, nil, nil)
}

// Post submits a form with the CSRF token of the last page read.
func (c *Client) Post(path string, form url.Values) *Response {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if form.Get("_csrf") == "" && c.csrf != "" {
		form.Set("_csrf", c.csrf)
	}
	return c.Do(http.MethodPost, path, strings.NewReader(form.Encode()), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
}

// Do sends a request and reads the whole answer.
func (c *Client) Do(method, path string, body io.Reader, h http.Header) *Response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, body)
	require.NoError(c.t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	return c.Send(req)
}

// Send sends a prepared request (to this server or another, such as an
// OpenID provider) with the client's cookies.
func (c *Client) Send(req *http.Request) *Response {
	c.t.Helper()
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	out := &Response{Status: res.StatusCode, URL: res.Request.URL, Header: res.Header, Body: string(b)}
	if m := csrfInput.FindStringSubmatch(out.Body); m != nil {
		c.csrf = m[1]
	}
	return out
}

// CSRF is the token of the last page read.
func (c *Client) CSRF() string { return c.csrf }

// SignIn signs in with a password and fails the test if that does not work.
func (c *Client) SignIn(email, password string) *Response {
	c.t.Helper()
	c.Get("/auth/sign-in")
	res := c.Post("/auth/sign-in", url.Values{"email": {email}, "password": {password}})
	require.Equal(c.t, http.StatusOK, res.Status, "sign-in as %s: %s", email, res.Body)
	require.NotContains(c.t, res.URL.Path, "/auth/sign-in", "still on the sign-in page")
	return res
}

// Cookies are the cookies the client holds for u.
func (c *Client) Cookies(u *url.URL) []*http.Cookie { return c.http.Jar.Cookies(u) }
