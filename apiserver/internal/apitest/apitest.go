// Package apitest holds what the API server's handler tests share: a control
// plane store in a temporary directory, tenants seeded into it, and helpers
// to send requests and read JSON answers.
package apitest // import "github.com/glassbox-dev/glassbox/apiserver/internal/apitest"

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// ControlPlane opens a SQLite control plane store in a temporary directory.
func ControlPlane(t testing.TB) *controlplane.Store {
	t.Helper()
	s, err := controlplane.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "cp.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// Tenant is an organization with one project and a key of each scope.
type Tenant struct {
	OrgID     string
	ProjectID string
	// ProjectAuth and OrgAuth are Authorization header values.
	ProjectAuth string
	OrgAuth     string
	// ProjectBearer is the Authorization header value of the project's
	// public key alone, which grants only the scores scope.
	ProjectBearer string
	// ProjectKeyID and OrgKeyID are the keys' ids, as key lists show them.
	ProjectKeyID string
	OrgKeyID     string
}

// Seed creates the organization and project named id with a project key and
// an organization key.
func Seed(t testing.TB, s *controlplane.Store, id string) Tenant {
	t.Helper()
	ctx := context.Background()
	_, err := s.CreateOrganization(ctx, "org-"+id, "Org "+id)
	require.NoError(t, err)
	_, err = s.CreateProject(ctx, "org-"+id, controlplane.NewProject{ID: "project-" + id, Name: "Project " + id})
	require.NoError(t, err)
	pk, psk, err := s.CreateAPIKey(ctx, "org-"+id, "project-"+id, controlplane.NewAPIKey{Note: "project key"})
	require.NoError(t, err)
	ok, osk, err := s.CreateAPIKey(ctx, "org-"+id, "", controlplane.NewAPIKey{Note: "organization key"})
	require.NoError(t, err)
	return Tenant{
		OrgID:         "org-" + id,
		ProjectID:     "project-" + id,
		ProjectAuth:   Basic(pk.PublicKey, psk),
		OrgAuth:       Basic(ok.PublicKey, osk),
		ProjectBearer: "Bearer " + pk.PublicKey,
		ProjectKeyID:  pk.ID,
		OrgKeyID:      ok.ID,
	}
}

// Basic is the Authorization header value of a key pair.
func Basic(publicKey, secretKey string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(publicKey+":"+secretKey))
}

// Do sends a request to h; body, when not nil, is sent as JSON.
func Do(t testing.TB, h http.Handler, method, target, auth string, body any) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(buf)
	}
	req := httptest.NewRequest(method, target, rd)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Decode reads a JSON answer into a T, failing the test when it does not parse.
func Decode[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), rec.Body.String())
	return v
}
