package mcp

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Secrets is the control plane's store of server secrets, shared by every
// API server of a deployment.
type Secrets interface {
	Secret(ctx context.Context, name string) ([]byte, error)
}

// secretName names the store secret that signs session ids.
const secretName = "mcp-session-signing" //nolint:gosec // the name of a stored secret, not a secret

// Session limits. A session grants nothing (every request carries its key
// pair), so these bound memory rather than protect data.
const (
	// sessionLifetime is how long a session id is accepted after initialize;
	// then the client gets 404 and initializes again.
	sessionLifetime = 24 * time.Hour
	// sessionIdle evicts a session this server has not seen for a while; it
	// is recreated from its id if it comes back within its lifetime.
	sessionIdle = time.Hour
	// maxSessions and maxEnded bound what one server holds.
	maxSessions = 10000
	maxEnded    = 10000
)

// session is what the server knows of one MCP session.
type session struct {
	id        string
	projectID string
	version   string
	expires   time.Time
	lastSeen  time.Time
}

// sessions holds the live sessions of this server. Session ids are signed
// with a key every server of the deployment shares, and carry the project,
// protocol version and issue time, so that a server that did not issue an
// id (behind a load balancer) or has evicted it recreates the session
// rather than making the client start over.
type sessions struct {
	secrets Secrets
	now     func() time.Time

	mu    sync.Mutex
	key   []byte
	byID  map[string]*list.Element // of *session, most recently seen first
	order *list.List
	// ended are ids ended by DELETE, until their lifetime is over, in the
	// order they ended.
	ended      map[string]*list.Element
	endedOrder *list.List
}

func newSessions(secrets Secrets, now func() time.Time) *sessions {
	return &sessions{secrets: secrets, now: now, byID: map[string]*list.Element{}, order: list.New(),
		ended: map[string]*list.Element{}, endedOrder: list.New()}
}

func (s *sessions) signingKey(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key != nil {
		return key, nil
	}
	key, err := s.secrets.Secret(ctx, secretName)
	if err != nil {
		return nil, fmt.Errorf("read the MCP session key: %w", err)
	}
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
	return key, nil
}

// sign binds an id's parts to the project that created it: the id of one
// project's session does not verify under another project's key.
func sign(key []byte, projectID, nonce, issued, version string) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "mcp-session\n%s\n%s\n%s\n%s", projectID, nonce, issued, version)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// create starts a session for a project at a negotiated version.
func (s *sessions) create(ctx context.Context, projectID, version string) (*session, error) {
	key, err := s.signingKey(ctx)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 16)
	if _, err := rand.Read(buf); err != nil {
		return nil, fmt.Errorf("generate a session id: %w", err)
	}
	now := s.now()
	nonce, issued := base64.RawURLEncoding.EncodeToString(buf), strconv.FormatInt(now.Unix(), 10)
	id := strings.Join([]string{nonce, issued, version, sign(key, projectID, nonce, issued, version)}, ".")
	sess := &session{id: id, projectID: projectID, version: version, expires: now.Add(sessionLifetime), lastSeen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(sess)
	return sess, nil
}

// lookup returns the live session of an id for a project, recreating it
// from the id when this server does not hold it; nil when the id is not a
// live session of that project (ended, expired, forged, or another
// project's), which the client is told with a 404.
func (s *sessions) lookup(ctx context.Context, projectID, id string) (*session, error) {
	now := s.now()
	s.mu.Lock()
	if _, ended := s.ended[id]; ended {
		s.mu.Unlock()
		return nil, nil
	}
	if el, ok := s.byID[id]; ok {
		sess := el.Value.(*session)
		if sess.projectID == projectID && now.Before(sess.expires) {
			sess.lastSeen = now
			s.order.MoveToFront(el)
			s.mu.Unlock()
			return sess, nil
		}
		if !now.Before(sess.expires) {
			s.remove(el)
		}
		s.mu.Unlock()
		return nil, nil
	}
	s.mu.Unlock()

	parts := strings.Split(id, ".")
	if len(parts) != 4 || !supported(parts[2]) {
		return nil, nil
	}
	issuedUnix, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return nil, nil
	}
	expires := time.Unix(issuedUnix, 0).Add(sessionLifetime)
	if !now.Before(expires) {
		return nil, nil
	}
	key, err := s.signingKey(ctx)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal([]byte(parts[3]), []byte(sign(key, projectID, parts[0], parts[1], parts[2]))) {
		return nil, nil
	}
	sess := &session{id: id, projectID: projectID, version: parts[2], expires: expires, lastSeen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byID[id]; ok { // recreated meanwhile by a concurrent request
		return el.Value.(*session), nil
	}
	s.add(sess)
	return sess, nil
}

// end ends a session: its id gets 404 on this server from now on.
func (s *sessions) end(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byID[sess.id]; ok {
		s.remove(el)
	}
	if _, ok := s.ended[sess.id]; ok {
		return
	}
	// Forget ended ids in the order they ended: those past their lifetime
	// (every id expires a fixed time after its issue), and beyond maxEnded
	// the oldest, which would come back as live for what remains of it.
	now := s.now()
	for el := s.endedOrder.Front(); el != nil; el = s.endedOrder.Front() {
		old := el.Value.(*session)
		if s.endedOrder.Len() < maxEnded && now.Before(old.expires) {
			break
		}
		delete(s.ended, old.id)
		s.endedOrder.Remove(el)
	}
	s.ended[sess.id] = s.endedOrder.PushBack(sess)
}

// add stores a session, evicting idle ones and, beyond maxSessions, the
// least recently seen. Callers hold mu.
func (s *sessions) add(sess *session) {
	now := s.now()
	for el := s.order.Back(); el != nil; el = s.order.Back() {
		old := el.Value.(*session)
		if s.order.Len() < maxSessions && now.Sub(old.lastSeen) < sessionIdle && now.Before(old.expires) {
			break
		}
		s.remove(el)
	}
	s.byID[sess.id] = s.order.PushFront(sess)
}

func (s *sessions) remove(el *list.Element) {
	delete(s.byID, el.Value.(*session).id)
	s.order.Remove(el)
}

// count is the number of sessions held, for tests.
func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
