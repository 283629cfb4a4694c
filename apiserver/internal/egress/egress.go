// Package egress decides which hosts webhook evaluators may call. Anyone
// with a project key can create a webhook evaluator, so without a policy
// the server would fetch any URL a client names, including its own
// ClickHouse or a cloud metadata endpoint. The policy is the operator's
// list of hosts; it is checked when an evaluator is saved and again on
// every connection, after name resolution, so that neither a changed DNS
// answer nor a redirect reaches a host the list does not name.
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

// ConfigKey names the setting in messages, so that a refusal says what to change.
const ConfigKey = "evaluation.webhook_allowed_hosts"

// ErrDenied is the reason of every refusal.
var ErrDenied = errors.New("webhook URL not allowed")

// Policy is a parsed list of allowed hosts. The zero Policy allows nothing.
type Policy struct {
	names    []string       // exact host names, lower case
	suffixes []string       // "*.example.com" entries as ".example.com"
	prefixes []netip.Prefix // address and range entries
	// lookup resolves a host name; tests replace it.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// New parses entries: a host name (hooks.example.com), a wildcard for its
// subdomains (*.example.com), an address (10.0.0.7, ::1) or a range
// (10.0.0.0/8). Ports, schemes and paths are not part of an entry.
func New(entries []string) (Policy, error) {
	p := Policy{lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
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
			errs = append(errs, fmt.Errorf("%s: %q is not a host name, *.domain, address or address range", ConfigKey, raw))
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
	return len(p.names)+len(p.suffixes)+len(p.prefixes) > 0
}

// CheckURL refuses a URL whose scheme is not http(s) or whose host the
// list does not name; an address literal must also pass the local address
// rule of CheckAddr. Names are resolved only when called.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%w: %q is not an absolute http(s) URL", ErrDenied, raw)
	}
	return p.checkHost(u.Hostname())
}

func (p Policy) checkHost(host string) error {
	if !p.Enabled() {
		return fmt.Errorf("%w: webhooks are off until %s lists the hosts they may call", ErrDenied, ConfigKey)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if addr, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(host, addr)
	}
	if slices.Contains(p.names, host) || slices.ContainsFunc(p.suffixes, func(s string) bool { return strings.HasSuffix(host, s) }) {
		return nil
	}
	return fmt.Errorf("%w: host %q is not listed in %s", ErrDenied, host, ConfigKey)
}

// CheckAddr refuses an address host resolved to when it is local
// (loopback, unspecified or link-local, where metadata services live) and
// the list names it neither as an address or range nor, for loopback, as
// localhost. An address literal host must itself be covered by an address
// or range entry.
func (p Policy) CheckAddr(host string, addr netip.Addr) error {
	addr = addr.Unmap()
	if slices.ContainsFunc(p.prefixes, func(pr netip.Prefix) bool { return pr.Contains(addr) }) {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return fmt.Errorf("%w: address %s is not listed in %s", ErrDenied, addr, ConfigKey)
	}
	local := addr.IsLoopback() || addr.IsUnspecified() || addr.IsLinkLocalUnicast()
	if !local || (addr.IsLoopback() && host == "localhost" && slices.Contains(p.names, "localhost")) {
		return nil
	}
	return fmt.Errorf("%w: host %q resolves to the local address %s, which %s does not list", ErrDenied, host, addr, ConfigKey)
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
// follows no redirect: a 3xx is the webhook's answer.
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
