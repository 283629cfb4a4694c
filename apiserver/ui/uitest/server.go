// Package uitest is the harness of the UI's tests: a real API server (SQLite
// control plane, the test ClickHouse) on loopback with a signed-up owner, an
// HTTP client that signs in and posts forms with their CSRF token, and a
// headless Chromium driven through chromedp.
package uitest // import "github.com/glassbox-dev/glassbox/apiserver/ui/uitest"

import (
	"context"
	"go.opentelemetry.io/collector/config/configopaque"
	"net"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/workers"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// Env is a running server with one organization, one project, a key pair
// and its owner.
type Env struct {
	// URL is the base URL people open, with the base path when one is set.
	URL    string
	Server *apiserver.Server
	Store  *controlplane.Store
	// ClickHouse is the test database the server reads and writes.
	ClickHouse chstore.Config

	OwnerEmail, OwnerPassword string
	Owner                     controlplane.User
	OrgID, ProjectID          string
	PublicKey, SecretKey      string
}

// Options change the server a test starts.
type Options struct {
	// BasePath serves everything below a path prefix, as behind a proxy.
	BasePath string
	// Configure changes the configuration before the server starts.
	Configure func(*apiserver.Config)
}

// Start runs a server for the test and stops it when the test ends.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	ch := chtest.Config(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String() + opts.BasePath

	cfg := apiserver.NewDefaultConfig()
	cfg.Listen = ""
	cfg.PublicURL = base
	cfg.ControlPlane.DSN = "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	cfg.ClickHouse.DSN, cfg.ClickHouse.Database, cfg.ClickHouse.QueryTimeout = configopaque.String(ch.DSN), ch.Database, ch.QueryTimeout
	cfg.Media.Dir = filepath.Join(t.TempDir(), "media")
	cfg.Evaluation.Enabled = false
	cfg.Automations.Enabled = false
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	logger := zap.NewNop()
	if testing.Verbose() {
		logger = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	}
	srv, err := apiserver.New(context.Background(), cfg, logger)
	require.NoError(t, err)
	// The background jobs the test turns on, as the standalone server runs them.
	jobs, err := workers.Start(cfg.Config, cfg.PublicURL, workers.Stores{ControlPlane: srv.ControlPlane(), ClickHouse: srv.ClickHouse()}, logger)
	require.NoError(t, err)
	hs := httptest.NewUnstartedServer(srv.Handler())
	_ = hs.Listener.Close()
	hs.Listener = ln
	hs.Config.ErrorLog = nil
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		jobs.Stop()
		require.NoError(t, srv.Close())
	})

	env := &Env{URL: base, Server: srv, Store: srv.ControlPlane(), ClickHouse: ch, OwnerEmail: "owner@example.com", OwnerPassword: "owner password 1"}
	ctx := context.Background()
	env.Owner, err = env.Store.CreateUser(ctx, controlplane.NewUser{Email: env.OwnerEmail, Name: "Olive Owner", Password: env.OwnerPassword})
	require.NoError(t, err)
	org, err := env.Store.CreateOrganizationWithOwner(ctx, "Acme", env.Owner.ID)
	require.NoError(t, err)
	env.OrgID = org.ID
	p, err := env.Store.CreateProject(ctx, org.ID, controlplane.NewProject{Name: "Chatbot"})
	require.NoError(t, err)
	env.ProjectID = p.ID
	key, secret, err := env.Store.CreateAPIKey(ctx, org.ID, p.ID, controlplane.NewAPIKey{Note: "test"})
	require.NoError(t, err)
	env.PublicKey, env.SecretKey = key.PublicKey, secret
	return env
}

// AddMember creates a user with a password and gives them role in the
// organization.
func (e *Env) AddMember(t testing.TB, email string, role controlplane.Role) controlplane.User {
	t.Helper()
	u, err := e.Store.CreateUser(context.Background(), controlplane.NewUser{Email: email, Password: "member password 1"})
	require.NoError(t, err)
	require.NoError(t, e.Store.SetMembership(context.Background(), e.OrgID, u.ID, role))
	return u
}

// MemberPassword is the password AddMember gives.
const MemberPassword = "member password 1"

// OpenClickHouse connects to the server's ClickHouse database, for tests
// that check what a page stored; the connection closes with the test.
func (e *Env) OpenClickHouse(t testing.TB) *chstore.Store {
	t.Helper()
	ch, err := chstore.Open(context.Background(), e.ClickHouse)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	return ch
}
