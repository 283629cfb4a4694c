package uitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Event is one event of a Langfuse ingestion batch (trace-create,
// span-create, generation-create, score-create, ...).
type Event struct {
	Type string
	Body map[string]any
}

// Ingest sends events through the server's public ingestion route with the
// project's key pair, as the Langfuse SDKs do, and fails the test unless
// every event was accepted.
func (e *Env) Ingest(t testing.TB, events ...Event) {
	t.Helper()
	batch := make([]map[string]any, 0, len(events))
	now := time.Now().UTC()
	for _, ev := range events {
		batch = append(batch, map[string]any{"id": fmt.Sprintf("%s-%d", ev.Type, eventSeq.Add(1)),
			"type": ev.Type, "timestamp": now.Format(time.RFC3339Nano), "body": ev.Body})
	}
	body, err := json.Marshal(map[string]any{"batch": batch})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, e.URL+"/api/public/ingestion", bytes.NewReader(body))
	require.NoError(t, err)
	req.SetBasicAuth(e.PublicKey, e.SecretKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusMultiStatus, res.StatusCode, string(out))
	var parsed struct {
		Errors []any `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(out, &parsed))
	require.Empty(t, parsed.Errors, string(out))
}

var eventSeq atomic.Int64

// Time formats a time as the SDKs send it.
func Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
