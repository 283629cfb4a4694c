package tracing_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

// upload stores bytes through the media API as the SDKs do and returns the
// media id.
func upload(t *testing.T, env *uitest.Env, traceID, contentType string, content []byte) string {
	t.Helper()
	sum := sha256.Sum256(content)
	body, _ := json.Marshal(map[string]any{"traceId": traceID, "field": "input", "contentType": contentType,
		"contentLength": len(content), "sha256Hash": base64.StdEncoding.EncodeToString(sum[:])})
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/api/public/media", bytes.NewReader(body))
	req.SetBasicAuth(env.PublicKey, env.SecretKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var up struct {
		MediaID   string  `json:"mediaId"`
		UploadURL *string `json:"uploadUrl"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&up))
	_ = res.Body.Close()
	require.NotNil(t, up.UploadURL)
	put, _ := http.NewRequest(http.MethodPut, *up.UploadURL, bytes.NewReader(content))
	put.Header.Set("Content-Type", contentType)
	res, err = http.DefaultClient.Do(put)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Less(t, res.StatusCode, 300)
	return up.MediaID
}

func TestUploadedMediaShowInTheTrace(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	png := []byte("\x89PNG\r\n\x1a\n fake image bytes")
	id := upload(t, env, "with-image", "image/png", png)
	pdf := upload(t, env, "with-image", "application/pdf", []byte("%PDF-1.4 fake"))
	ref := func(typ, id string) string {
		return "@@@langfuseMedia:type=" + typ + "|id=" + id + "|source=base64_data_uri@@@"
	}
	at := time.Now().Add(-time.Minute)
	env.Ingest(t,
		uitest.Event{Type: "trace-create", Body: map[string]any{"id": "with-image", "name": "vision", "timestamp": uitest.Time(at),
			"input": ref("application/pdf", pdf), "public": true}},
		uitest.Event{Type: "generation-create", Body: map[string]any{"id": "gen", "traceId": "with-image", "name": "describe",
			"startTime": uitest.Time(at), "model": "gpt-4o", "input": []map[string]any{{"role": "user", "content": []map[string]any{
				{"type": "text", "text": "What is in this picture?"},
				{"type": "image_url", "image_url": map[string]any{"url": ref("image/png", id)}}}}}}},
	)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	src := "/project/" + env.ProjectID + "/media/" + id
	res := c.Get("/project/" + env.ProjectID + "/traces/with-image?observation=gen")
	assert.Contains(t, res.Body, `<img src="`+src+`"`)
	res = c.Get(src)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, string(png), res.Body, "the image comes from this server through a signed URL")

	res = c.Get("/project/" + env.ProjectID + "/traces/with-image")
	assert.Contains(t, res.Body, "Attachment (application/pdf)", "a file is linked")
	assert.Equal(t, http.StatusNotFound, c.Get("/project/"+env.ProjectID+"/media/no-such-media").Status)

	// The shared page names media without loading the project's files.
	anon := uitest.NewClient(t, env.URL)
	res = anon.Get("/project/" + env.ProjectID + "/traces/with-image?observation=gen")
	require.Equal(t, http.StatusOK, res.Status)
	assert.NotContains(t, res.Body, src)
	assert.Contains(t, res.Body, "Attachment (image/png)")
	res = anon.Get(src)
	assert.Equal(t, "/auth/sign-in", res.URL.Path)
}
