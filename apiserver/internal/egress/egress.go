// Package egress decides which hosts the server may call on a project's
// behalf: webhook evaluators and LLM connections. Anyone with a project key
// can name such a URL, so without a policy the server would fetch any URL
// a client names, including its own ClickHouse or a cloud metadata
// endpoint. The policy is the operator's list of hosts; it is checked when
// a URL is saved and again on every connection, after name resolution, so
// that neither a changed DNS answer nor a redirect reaches a host the list
// does not name.
package egress // import "github.com/glassbox-dev/glassbox/apiserver/internal/egress"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Settings naming the lists, so that a refusal says what to change.
const (
	WebhookKey = "evaluation.webhook_allowed_hosts"
	LLMKey     = "evaluation.llm_allowed_hosts"
)

// ErrDenied is the reason of every refusal.
var ErrDenied = errors.New("URL not allowed")

// Policy is a parsed list of allowed hosts. The zero Policy allows nothing.
type Policy struct {
	key      string         // the setting the list comes from
	public   bool           // an empty list allows public addresses
	names    []string       // exact host names, lower case
	suffixes []string       // "*.example.com" entries as ".example.com"
	prefixes []netip.Prefix // address and range entries
	// lookup resolves a host name; tests replace it.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Webhooks parses evaluation.webhook_allowed_hosts: an empty list turns
// webhooks off, since their URLs are anyone's choice and have no default.
func Webhooks(entries []string) (Policy, error) {
	return parse(WebhookKey, false, entries)
}

// LLM parses evaluation.llm_allowed_hosts: an empty list allows public
// addresses only, so that the providers' public APIs work unconfigured
// while loopback, private, link-local and unspecified addresses stay out
// of reach.
func LLM(entries []string) (Policy, error) {
	return parse(LLMKey, true, entries)
}

// parse reads entries: a host name (hooks.example.com), a wildcard for its
// subdomains (*.example.com), an address (10.0.0.7, ::1) or a range
// (10.0.0.0/8). Ports, schemes and paths are not part of an entry.
func parse(key string, public bool, entries []string) (Policy, error) {
	p := Policy{key: key, public: public, lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}}
	var errs []error
	for _, raw := range entries {
		entry := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(raw), "."))
		if prefix, err := netip.ParsePrefix(entry); err == nil {
			p.prefixes = append(p.prefixes, prefix.Masked())
			continue
		}
		if addr, err := netip.ParseAddr(entry); err == nil {
			p.prefixes = append(p.prefixes, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
			continue
		}
		domain, wildcard := strings.CutPrefix(entry, "*.")
		if !validName(domain) {
			errs = append(errs, fmt.Errorf("%s: %q is not a host name, *.domain, address or address range", key, raw))
			continue
		}
		if wildcard {
			p.suffixes = append(p.suffixes, "."+domain)
		} else {
			p.names = append(p.names, domain)
		}
	}
	return p, errors.Join(errs...)
}

// validName accepts DNS names: dot-separated labels of letters, digits,
// '-' and '_'.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// Enabled reports whether any host is allowed.
func (p Policy) Enabled() bool {
	return p.listed() || p.public
}

// listed reports whether the list names any host.
func (p Policy) listed() bool {
	return len(p.names)+len(p.suffixes)+len(p.prefixes) > 0
}

// CheckURL refuses a URL whose scheme is not http(s) or whose host the
// policy does not allow; an address literal must also pass CheckAddr.
// Names are resolved only when called.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%w: %q is not an absolute http(s) URL", ErrDenied, raw)
	}
	return p.checkHost(u.Hostname())
}

func (p Policy) checkHost(host string) error {
	if !p.Enabled() {
		// Only the webhook list turns calls off when empty; so does the zero Policy.
		return fmt.Errorf("%w: webhooks are off until %s lists the hosts they may call", ErrDenied, WebhookKey)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if addr, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(host, addr)
	}
	if !p.listed() {
		// Names are judged by their addresses, except those that are
		// loopback by definition (RFC 6761), refused before any lookup.
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			return fmt.Errorf("%w: host %q is a loopback name, which %s must list to allow", ErrDenied, host, p.key)
		}
		return nil
	}
	if slices.Contains(p.names, host) || slices.ContainsFunc(p.suffixes, func(s string) bool { return strings.HasSuffix(host, s) }) {
		return nil
	}
	return fmt.Errorf("%w: host %q is not listed in %s", ErrDenied, host, p.key)
}

// CheckAddr refuses an address host resolved to when the policy does not
// allow it. With an empty list (LLM connections only), only public
// addresses pass: none of IANA's special-purpose ranges (loopback, private,
// shared CGNAT space where some clouds serve metadata, link-local,
// NAT64/6to4/Teredo translation, documentation, benchmarking, reserved) nor
// multicast. With a list, an address literal host must be covered by an
// address or range entry, and a listed name must not lead to a local address
// (loopback, unspecified or link-local) that the list names neither as an
// address or range nor, for loopback, as localhost.
func (p Policy) CheckAddr(host string, addr netip.Addr) error {
	addr = addr.Unmap()
	if slices.ContainsFunc(p.prefixes, func(pr netip.Prefix) bool { return pr.Contains(addr) }) {
		return nil
	}
	if !p.listed() && p.public {
		if !isPublic(addr) {
			return fmt.Errorf("%w: host %q is the non-public address %s, which %s must list to allow", ErrDenied, host, addr, p.key)
		}
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return fmt.Errorf("%w: address %s is not listed in %s", ErrDenied, addr, p.key)
	}
	local := addr.IsLoopback() || addr.IsUnspecified() || addr.IsLinkLocalUnicast()
	if !local || (addr.IsLoopback() && host == "localhost" && slices.Contains(p.names, "localhost")) {
		return nil
	}
	return fmt.Errorf("%w: host %q resolves to the local address %s, which %s does not list", ErrDenied, host, addr, p.key)
}

// specialPurpose are the ranges of IANA's IPv4 and IPv6 special-purpose
// address registries that are not globally reachable, plus the
// translation prefixes (NAT64, 6to4, Teredo) through which an IPv6 address
// reaches an IPv4 one the other entries refuse.
var specialPurpose = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
		"2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10",
	} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

// isPublic reports whether addr is a globally reachable unicast address.
func isPublic(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("") // a zone makes Prefix.Contains false
	if !addr.IsValid() || addr.IsMulticast() {
		return false
	}
	return !slices.ContainsFunc(specialPurpose, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// checkResolved checks host, resolves it and checks every address, and
// returns the addresses to connect to.
func (p Policy) checkResolved(ctx context.Context, host string) ([]netip.Addr, error) {
	if err := p.checkHost(host); err != nil {
		return nil, err
	}
	addrs, err := p.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no address", host)
	}
	for _, addr := range addrs {
		if err := p.CheckAddr(strings.ToLower(host), addr); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// dialTimeout bounds connecting; the caller's context bounds the whole call.
const dialTimeout = 10 * time.Second

// dial connects only to addresses the policy allows: it checks the host,
// resolves it, checks every address, and connects to a checked one, so
// that a second, different DNS answer cannot slip in.
func (p Policy) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs, err := p.checkResolved(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: dialTimeout}
	var errs []error
	for _, addr := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(addr.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// Client returns an HTTP client that connects only where the policy
// allows. It uses no proxy (the policy checks the host it connects to) and
// follows no redirect: a 3xx is the called host's answer.
func (p Policy) Client() *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.DialContext = p.dial
	return &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
