package media

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
)

type fixture struct {
	h    http.Handler
	svc  *Service
	dir  string
	a, b apitest.Tenant
}

func setup(t *testing.T) fixture {
	cp := apitest.ControlPlane(t)
	f := fixture{dir: t.TempDir(), a: apitest.Seed(t, cp, "a"), b: apitest.Seed(t, cp, "b")}
	f.svc = New(cp, Config{Dir: f.dir, MaxContentLength: 1 << 20})
	router, err := httpx.NewRouter(f.svc.Routes(), httpx.Options{Verifier: cp, MaxBodyBytes: 1024})
	require.NoError(t, err)
	f.h = f.svc.Content(router)
	return f
}

func status(t *testing.T, rec *httptest.ResponseRecorder, want int, context ...string) {
	t.Helper()
	require.Equal(t, want, rec.Code, rec.Body.String(), context)
}

func hashOf(content []byte) string {
	sum := sha256.Sum256(content)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func register(t *testing.T, f fixture, auth string, content []byte, contentType string) UploadURL {
	t.Helper()
	rec := apitest.Do(t, f.h, http.MethodPost, "/api/public/media", auth, map[string]any{
		"traceId": "trace-1", "observationId": "obs-1", "field": "input",
		"contentType": contentType, "contentLength": len(content), "sha256Hash": hashOf(content),
	})
	status(t, rec, http.StatusOK)
	return apitest.Decode[UploadURL](t, rec)
}

// send requests a signed URL the way the SDK does: no API key.
func send(t *testing.T, h http.Handler, method, rawURL string, body []byte, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	req := httptest.NewRequest(method, u.RequestURI(), bytes.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestUploadAndDownload(t *testing.T) {
	f := setup(t)
	// Larger than the router's 1 KiB body limit: the content route has its own.
	content := bytes.Repeat([]byte("\x89PNG-bytes"), 300)
	up := register(t, f, f.a.ProjectAuth, content, "image/png")
	sum := sha256.Sum256(content)
	assert.Equal(t, base64.URLEncoding.EncodeToString(sum[:])[:22], up.MediaID, "the id the SDK computes")
	require.NotNil(t, up.UploadURL)
	assert.Contains(t, *up.UploadURL, "http://example.com/api/public/media/"+up.MediaID+"/content?")

	rec := send(t, f.h, http.MethodPut, *up.UploadURL, content,
		map[string]string{"Content-Type": "image/png", "x-amz-checksum-sha256": hashOf(content)})
	status(t, rec, http.StatusOK)
	stored, err := os.ReadFile(filepath.Join(f.dir, f.a.ProjectID, up.MediaID))
	require.NoError(t, err)
	assert.Equal(t, content, stored)

	again := register(t, f, f.a.ProjectAuth, content, "image/png")
	assert.Equal(t, up.MediaID, again.MediaID)
	assert.Nil(t, again.UploadURL, "stored content is not uploaded twice")

	rec = apitest.Do(t, f.h, http.MethodPatch, "/api/public/media/"+up.MediaID, f.a.ProjectAuth, map[string]any{
		"uploadedAt": "2025-06-01T12:00:00.000Z", "uploadHttpStatus": 200, "uploadHttpError": "", "uploadTimeMs": 12})
	status(t, rec, http.StatusNoContent)

	rec = apitest.Do(t, f.h, http.MethodGet, "/api/public/media/"+up.MediaID, f.a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	record := apitest.Decode[Record](t, rec)
	assert.Equal(t, "image/png", record.ContentType)
	assert.Equal(t, int64(len(content)), record.ContentLength)
	assert.WithinDuration(t, time.Now().Add(DefaultURLTTL), time.Time(record.URLExpiry), time.Minute)

	rec = send(t, f.h, http.MethodGet, record.URL, nil, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, content, rec.Body.Bytes())
	assert.Equal(t, "image/png", rec.Header().Get("Content-Type"))
	assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))

	// A download URL does not upload, nor an upload URL download.
	status(t, send(t, f.h, http.MethodPut, record.URL, content, nil), http.StatusForbidden)
	status(t, send(t, f.h, http.MethodGet, *up.UploadURL, nil, nil), http.StatusForbidden)
	status(t, send(t, f.h, http.MethodDelete, record.URL, nil, nil), http.StatusMethodNotAllowed)
}

func TestUploadChecks(t *testing.T) {
	f := setup(t)
	content := []byte("%PDF-1.7 small document")
	up := register(t, f, f.a.ProjectAuth, content, "application/pdf")
	require.NotNil(t, up.UploadURL)

	other := []byte("%PDF-1.7 other document")
	require.Len(t, other, len(content))
	rec := send(t, f.h, http.MethodPut, *up.UploadURL, other, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "SHA-256")
	status(t, send(t, f.h, http.MethodPut, *up.UploadURL, content[:5], nil), http.StatusBadRequest)
	status(t, send(t, f.h, http.MethodPut, *up.UploadURL, content, map[string]string{"x-amz-checksum-sha256": hashOf(other)}),
		http.StatusBadRequest)

	u, err := url.Parse(*up.UploadURL)
	require.NoError(t, err)
	for _, change := range []func(q url.Values){
		func(q url.Values) { q.Set("signature", "forged") },
		func(q url.Values) { q.Set("project", f.b.ProjectID) },
		func(q url.Values) { q.Set("project", "../../etc") },
		func(q url.Values) { q.Set("expires", "99999999999") },
		func(q url.Values) { q.Del("expires") },
		func(q url.Values) { q.Del("signature") },
	} {
		q := u.Query()
		change(q)
		tampered := *u
		tampered.RawQuery = q.Encode()
		status(t, send(t, f.h, http.MethodPut, tampered.String(), content, nil), http.StatusForbidden, tampered.RawQuery)
	}
	// The URL of another media id does not fit this one.
	other22 := "AAAAAAAAAAAAAAAAAAAAAA"
	status(t, send(t, f.h, http.MethodPut, "http://example.com/api/public/media/"+other22+"/content?"+u.RawQuery, content, nil),
		http.StatusForbidden)

	f.svc.now = func() time.Time { return time.Now().Add(2 * DefaultURLTTL) }
	rec = send(t, f.h, http.MethodPut, *up.UploadURL, content, nil)
	status(t, rec, http.StatusForbidden)
	assert.Contains(t, rec.Body.String(), "expired")
	f.svc.now = time.Now

	status(t, send(t, f.h, http.MethodPut, *up.UploadURL, content, nil), http.StatusOK)
	_, err = os.Stat(filepath.Join(f.dir, f.a.ProjectID))
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(f.dir, f.a.ProjectID))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "failed uploads leave no files behind")
}

func TestRegisterValidation(t *testing.T) {
	f := setup(t)
	good := map[string]any{"traceId": "t", "field": "output", "contentType": "image/jpeg", "contentLength": 3, "sha256Hash": hashOf([]byte("abc"))}
	for field, change := range map[string]func(m map[string]any){
		"sha256Hash":    func(m map[string]any) { m["sha256Hash"] = "not-base64!" },
		"contentType":   func(m map[string]any) { m["contentType"] = "text/html" },
		"contentLength": func(m map[string]any) { m["contentLength"] = 2 << 20 },
		"field":         func(m map[string]any) { m["field"] = "body" },
		"traceId":       func(m map[string]any) { delete(m, "traceId") },
	} {
		body := map[string]any{}
		for k, v := range good {
			body[k] = v
		}
		change(body)
		rec := apitest.Do(t, f.h, http.MethodPost, "/api/public/media", f.a.ProjectAuth, body)
		status(t, rec, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), field)
	}
	rec := apitest.Do(t, f.h, http.MethodPost, "/api/public/media", f.a.ProjectAuth, good)
	status(t, rec, http.StatusOK)
	id := apitest.Decode[UploadURL](t, rec).MediaID
	rec = apitest.Do(t, f.h, http.MethodGet, "/api/public/media/"+id, f.a.ProjectAuth, nil)
	status(t, rec, http.StatusNotFound)
	assert.Contains(t, rec.Body.String(), "not been uploaded")
	status(t, apitest.Do(t, f.h, http.MethodPatch, "/api/public/media/"+id, f.a.ProjectAuth,
		map[string]any{"uploadedAt": "2025-06-01T12:00:00Z", "uploadHttpStatus": 42}), http.StatusBadRequest)
}

func TestIsolation(t *testing.T) {
	f := setup(t)
	content := []byte("RIFF....WAVEfmt ")
	up := register(t, f, f.a.ProjectAuth, content, "audio/wav")
	status(t, send(t, f.h, http.MethodPut, *up.UploadURL, content, nil), http.StatusOK)

	status(t, apitest.Do(t, f.h, http.MethodGet, "/api/public/media/"+up.MediaID, f.b.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, f.h, http.MethodPatch, "/api/public/media/"+up.MediaID, f.b.ProjectAuth,
		map[string]any{"uploadedAt": "2025-06-01T12:00:00Z", "uploadHttpStatus": 500}), http.StatusNotFound)
	status(t, apitest.Do(t, f.h, http.MethodGet, "/api/public/media/"+up.MediaID, "", nil), http.StatusUnauthorized)

	// The same bytes in project b are b's to upload; a's copy does not count.
	theirs := register(t, f, f.b.ProjectAuth, content, "audio/wav")
	assert.Equal(t, up.MediaID, theirs.MediaID)
	require.NotNil(t, theirs.UploadURL)
	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/media/"+up.MediaID, f.a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	rec = send(t, f.h, http.MethodGet, apitest.Decode[Record](t, rec).URL, nil, nil)
	status(t, rec, http.StatusOK)
	got, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	assert.Equal(t, content, got)
}

func TestPublicURL(t *testing.T) {
	f := setup(t)
	f.svc.cfg.PublicURL = "https://glassbox.example.com/base"
	up := register(t, f, f.a.ProjectAuth, []byte("gif"), "image/gif")
	require.NotNil(t, up.UploadURL)
	assert.Contains(t, *up.UploadURL, "https://glassbox.example.com/base/api/public/media/")
}
