package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRejectsMalformedEntries(t *testing.T) {
	for _, bad := range []string{"", "https://hooks.example.com", "hooks.example.com:8080", "hooks.example.com/x", "*", "*.", "a..b",
		"10.0.0.0/33", "host name"} {
		_, err := Webhooks([]string{bad})
		require.Error(t, err, bad)
		assert.ErrorContains(t, err, WebhookKey)
	}
	_, err := Webhooks([]string{"Hooks.Example.com.", "*.svc.example.com", "10.0.0.7", "10.1.0.0/16", "::1", "localhost"})
	assert.NoError(t, err)
}

func TestCheckURL(t *testing.T) {
	var none Policy
	assert.False(t, none.Enabled())
	err := none.CheckURL("https://hooks.example.com/score")
	require.ErrorIs(t, err, ErrDenied)
	assert.ErrorContains(t, err, "webhooks are off until "+WebhookKey)

	p, err := Webhooks([]string{"hooks.example.com", "*.svc.example.com", "10.1.0.0/16", "192.0.2.7", "localhost"})
	require.NoError(t, err)
	for _, ok := range []string{
		"https://hooks.example.com/score", "http://HOOKS.example.com.:8080/x", "https://a.svc.example.com/", "https://a.b.svc.example.com/",
		"http://10.1.2.3:9000/", "http://192.0.2.7/", "http://localhost:8080/",
	} {
		assert.NoError(t, p.CheckURL(ok), ok)
	}
	for bad, reason := range map[string]string{
		"ftp://hooks.example.com/":        "http(s)",
		"/relative":                       "http(s)",
		"https://evil.example.com/":       `host "evil.example.com" is not listed`,
		"https://svc.example.com/":        `host "svc.example.com" is not listed`, // a wildcard covers subdomains only
		"https://hooks.example.com.evil/": "is not listed",
		"http://10.2.0.1/":                "address 10.2.0.1 is not listed",
		"http://127.0.0.1:8123/":          "address 127.0.0.1 is not listed",
		"http://[::1]:8123/":              "address ::1 is not listed",
		"http://169.254.169.254/latest/":  "address 169.254.169.254 is not listed",
	} {
		err := p.CheckURL(bad)
		require.ErrorIs(t, err, ErrDenied, bad)
		assert.ErrorContains(t, err, reason, bad)
	}
}

// Local addresses need an entry of their own, whatever name leads to them.
func TestCheckAddr(t *testing.T) {
	p, err := Webhooks([]string{"*.example.com", "localhost", "fd00::/8"})
	require.NoError(t, err)
	public, loopback := netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("127.0.0.1")
	assert.NoError(t, p.CheckAddr("a.example.com", public))
	assert.NoError(t, p.CheckAddr("localhost", loopback), "localhost is listed")
	assert.NoError(t, p.CheckAddr("localhost", netip.MustParseAddr("::1")))
	assert.NoError(t, p.CheckAddr("a.example.com", netip.MustParseAddr("fd00::1")), "a listed range")
	for _, addr := range []string{"127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "0.0.0.0", "169.254.169.254", "fe80::1"} {
		err := p.CheckAddr("a.example.com", netip.MustParseAddr(addr))
		require.ErrorIs(t, err, ErrDenied, addr)
		assert.ErrorContains(t, err, "resolves to the local address", addr)
	}

	loopbackListed, err := Webhooks([]string{"*.example.com", "127.0.0.0/8"})
	require.NoError(t, err)
	assert.NoError(t, loopbackListed.CheckAddr("a.example.com", loopback))
	assert.Error(t, loopbackListed.CheckAddr("a.example.com", netip.MustParseAddr("::1")), "only the listed range")
}

func TestLLMDefaultAllowsPublicAddressesOnly(t *testing.T) {
	p, err := LLM(nil)
	require.NoError(t, err)
	assert.True(t, p.Enabled())
	for _, ok := range []string{"https://api.openai.com/v1", "https://8.8.8.8/v1", "http://[2606:4700:4700::1111]:8000/"} {
		assert.NoError(t, p.CheckURL(ok), ok)
	}
	for _, bad := range []string{"http://127.0.0.1:8123/", "http://[::1]/", "http://169.254.169.254/latest/", "http://[fe80::1]/",
		"http://10.1.2.3/", "http://172.16.0.1/", "http://192.168.1.1/", "http://[fd00::1]/", "http://0.0.0.0/", "http://[::]/",
		"http://[::ffff:127.0.0.1]/", "http://localhost:11434/", "http://ollama.localhost/"} {
		err := p.CheckURL(bad)
		require.ErrorIs(t, err, ErrDenied, bad)
		assert.ErrorContains(t, err, LLMKey, bad)
	}
	assert.ErrorContains(t, p.CheckURL("ftp://api.openai.com/"), "http(s)")

	// A public name is judged by what it resolves to.
	assert.NoError(t, p.CheckAddr("api.example.com", netip.MustParseAddr("8.8.8.8")))
	err = p.CheckAddr("api.example.com", netip.MustParseAddr("169.254.169.254"))
	require.ErrorIs(t, err, ErrDenied)
	assert.ErrorContains(t, err, "non-public address 169.254.169.254")

	_, err = LLM([]string{"https://api.openai.com"})
	assert.ErrorContains(t, err, LLMKey)
}

// The default LLM policy refuses every special-purpose range IANA lists as
// not globally reachable, and the prefixes that translate to IPv4.
func TestLLMDefaultRefusesSpecialPurposeRanges(t *testing.T) {
	p, err := LLM(nil)
	require.NoError(t, err)
	for addr, what := range map[string]string{
		"0.1.2.3":                "this network",
		"100.64.0.1":             "shared address space (CGNAT)",
		"100.100.100.200":        "a cloud metadata address in shared space",
		"192.0.0.8":              "IETF protocol assignments",
		"192.0.2.1":              "documentation",
		"192.88.99.1":            "6to4 relay anycast",
		"198.18.0.1":             "benchmarking",
		"198.51.100.1":           "documentation",
		"203.0.113.1":            "documentation",
		"240.0.0.1":              "reserved",
		"255.255.255.255":        "limited broadcast",
		"224.0.0.251":            "multicast",
		"64:ff9b::a9fe:a9fe":     "NAT64 of 169.254.169.254",
		"64:ff9b:1::1":           "local-use NAT64",
		"100::1":                 "discard-only",
		"2001::1":                "Teredo",
		"2001:2::1":              "benchmarking",
		"2001:db8::1":            "documentation",
		"2002:a9fe:a9fe::1":      "6to4 of 169.254.169.254",
		"3fff::1":                "documentation",
		"5f00::1":                "segment routing",
		"fec0::1":                "site-local",
		"fd00:ec2::254":          "unique local (AWS IPv6 metadata)",
		"ff02::1":                "multicast",
		"::ffff:100.100.100.200": "IPv4-mapped shared space",
		"::ffff:169.254.169.254": "IPv4-mapped link-local",
		"::":                     "unspecified",
		"fe80::1%eth0":           "link-local with a zone",
		"127.255.255.254":        "loopback",
		"172.31.255.255":         "private",
		"169.254.170.2":          "ECS task metadata",
		"192.168.255.1":          "private",
		"10.255.255.255":         "private",
		"::1":                    "loopback",
		"fc00::1":                "unique local",
		"febf:ffff::1":           "link-local",
		"2001:1ff:ffff::1":       "IETF protocol assignments",
		"64:ff9b::808:808":       "NAT64 even of a public address",
		"2002:808:808::1":        "6to4 even of a public address",
		"0.0.0.0":                "unspecified",
	} {
		err := p.CheckAddr("api.example.com", netip.MustParseAddr(addr))
		assert.ErrorIs(t, err, ErrDenied, "%s (%s)", addr, what)
	}
	for _, addr := range []string{"8.8.8.8", "1.1.1.1", "100.128.0.1", "198.20.0.1", "2606:4700:4700::1111", "2001:4860:4860::8888"} {
		assert.NoError(t, p.CheckAddr("api.example.com", netip.MustParseAddr(addr)), addr)
	}
}

// A non-empty list replaces the default: only what it names is allowed,
// listed private and loopback addresses included.
func TestLLMListedHosts(t *testing.T) {
	p, err := LLM([]string{"127.0.0.1", "10.0.0.0/8", "*.internal.example"})
	require.NoError(t, err)
	for _, ok := range []string{"http://127.0.0.1:8000/v1", "http://10.2.3.4/v1", "http://vllm.internal.example/v1"} {
		assert.NoError(t, p.CheckURL(ok), ok)
	}
	for bad, reason := range map[string]string{
		"https://api.openai.com/v1":      `host "api.openai.com" is not listed in ` + LLMKey,
		"http://192.168.1.1/":            "address 192.168.1.1 is not listed in " + LLMKey,
		"http://169.254.169.254/latest/": "address 169.254.169.254 is not listed",
	} {
		err := p.CheckURL(bad)
		require.ErrorIs(t, err, ErrDenied, bad)
		assert.ErrorContains(t, err, reason, bad)
	}
}

// serve starts a webhook that counts its calls, and a policy whose names
// all resolve to its (loopback) address.
func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, string) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return srv, u.Port()
}

func resolveTo(p *Policy, addr string) {
	p.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr(addr)}, nil
	}
}

func post(t *testing.T, p Policy, target string) (*http.Response, error) {
	t.Helper()
	c := p.Client()
	t.Cleanup(c.CloseIdleConnections)
	resp, err := c.Post(target, "application/json", nil)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}
	return resp, err
}

func TestClientConnectsOnlyWhereAllowed(t *testing.T) {
	var calls atomic.Int32
	_, port := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusOK)
	})

	// A listed name that resolves to loopback is refused before connecting.
	p, err := Webhooks([]string{"hooks.example.com"})
	require.NoError(t, err)
	resolveTo(&p, "127.0.0.1")
	_, err = post(t, p, "http://hooks.example.com:"+port+"/")
	require.ErrorIs(t, err, ErrDenied)
	assert.ErrorContains(t, err, "resolves to the local address 127.0.0.1")

	// A host the list does not name is refused even when the URL check was skipped.
	_, err = post(t, p, "http://other.example.com:"+port+"/")
	assert.ErrorIs(t, err, ErrDenied)
	assert.Zero(t, calls.Load())

	// Listing the loopback address, or localhost, lets the call through.
	for host, entries := range map[string][]string{"hooks.example.com": {"hooks.example.com", "127.0.0.1"}, "localhost": {"localhost"}} {
		p, err := Webhooks(entries)
		require.NoError(t, err)
		resolveTo(&p, "127.0.0.1")
		resp, err := post(t, p, "http://"+host+":"+port+"/")
		require.NoError(t, err, entries)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.Equal(t, int32(2), calls.Load())

	// Every address of a name must pass, not just the first one tried.
	mixed, err := Webhooks([]string{"hooks.example.com"})
	require.NoError(t, err)
	mixed.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("127.0.0.1")}, nil
	}
	_, err = mixed.dial(context.Background(), "tcp", net.JoinHostPort("hooks.example.com", port))
	assert.ErrorIs(t, err, ErrDenied)
	assert.Equal(t, int32(2), calls.Load())
}

// With the default LLM policy, the dialler lets a public name through and
// refuses one that resolves to a non-public address before connecting.
func TestLLMClientChecksResolvedAddresses(t *testing.T) {
	var calls atomic.Int32
	_, port := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	p, err := LLM(nil)
	require.NoError(t, err)
	for _, addr := range []string{"127.0.0.1", "169.254.169.254", "10.0.0.7"} {
		resolveTo(&p, addr)
		_, err = post(t, p, "http://api.example.com:"+port+"/v1/chat/completions")
		require.ErrorIs(t, err, ErrDenied, addr)
		assert.ErrorContains(t, err, "non-public address "+addr)
	}
	for _, target := range []string{"http://127.0.0.1:" + port + "/", "http://169.254.169.254:" + port + "/"} {
		_, err = post(t, p, target)
		assert.ErrorIs(t, err, ErrDenied, target)
	}
	assert.Zero(t, calls.Load())

	// A public answer passes the check; the dial itself is not attempted
	// here, so the test needs no network.
	resolveTo(&p, "8.8.8.8")
	addrs, err := p.checkResolved(context.Background(), "api.example.com")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("8.8.8.8")}, addrs)

	listed, err := LLM([]string{"127.0.0.1"})
	require.NoError(t, err)
	resp, err := post(t, listed, "http://127.0.0.1:"+port+"/")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int32(1), calls.Load())
}

// A redirect is the webhook's answer, not a second request: otherwise an
// allowed host could send the server anywhere.
func TestClientFollowsNoRedirect(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	p, err := Webhooks([]string{"127.0.0.1"})
	require.NoError(t, err)
	resp, err := post(t, p, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusFound, resp.StatusCode)
}
