package automations

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/glassbox-dev/glassbox/internal/testutil/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// receiver records what it is sent and answers with the queued statuses,
// then 200.
type receiver struct {
	t      *testing.T
	secret string
	srv    *httptest.Server

	mu       sync.Mutex
	statuses []int
	got      []received
}

type received struct {
	header http.Header
	body   []byte
	valid  bool // the signature checked out
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{t: t, statuses: statuses}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body,
			valid: verify(rc.secret, r.Header.Get(SignatureHeader), body)})
		status := http.StatusOK
		if len(rc.statuses) > 0 {
			status, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("answer " + strconv.Itoa(status)))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) received() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// verify checks a signature header the way a receiver would: the HMAC of
// "<t>.<body>" and a timestamp within five minutes.
func verify(secret, header string, body []byte) bool {
	var ts, sig string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(sig))
}

type fixture struct {
	store   *controlplane.Store
	box     *secretbox.Box
	project string
	dsn     string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	return newFixtureAt(t, "sqlite://"+filepath.Join(t.TempDir(), "cp.db"))
}

func newFixtureAt(t *testing.T, dsn string) fixture {
	t.Helper()
	ctx := context.Background()
	store := openStore(t, dsn)
	_, err := store.CreateOrganization(ctx, "org", "Org")
	require.NoError(t, err)
	_, err = store.CreateProject(ctx, "org", controlplane.NewProject{ID: "proj", Name: "Project"})
	require.NoError(t, err)
	box, err := secretbox.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	return fixture{store: store, box: box, project: "proj", dsn: dsn}
}

func openStore(t *testing.T, dsn string) *controlplane.Store {
	t.Helper()
	store, err := controlplane.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, store.Close()) })
	return store
}

func (f fixture) automation(t *testing.T, url string, events ...string) (controlplane.Automation, string) {
	t.Helper()
	if len(events) == 0 {
		events = controlplane.AutomationEvents
	}
	a, secret, err := f.store.CreateAutomation(context.Background(), f.box, f.project, controlplane.NewAutomation{
		Name: "hook " + strconv.FormatInt(time.Now().UnixNano(), 36), Events: events, URL: url,
		Headers: map[string]string{"Authorization": "Bearer t0ken"}})
	require.NoError(t, err)
	return a, secret
}

func fastConfig() Config {
	cfg := NewDefaultConfig()
	cfg.PollInterval = 10 * time.Millisecond
	cfg.RetryBackoff = 20 * time.Millisecond
	cfg.MaxRetryBackoff = 40 * time.Millisecond
	cfg.Timeout = 5 * time.Second
	cfg.MaxAttempts = 3
	return cfg
}

func startWorker(t *testing.T, f fixture, store WorkerStore, cfg Config, hosts ...string) *Worker {
	t.Helper()
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1"}
	}
	policy, err := egress.Webhooks(hosts)
	require.NoError(t, err)
	w, err := NewWorker(cfg, store, f.box, policy, zap.NewNop())
	require.NoError(t, err)
	w.Start()
	t.Cleanup(w.Stop)
	return w
}

// waitFinal waits until the automation's deliveries are all final.
func waitFinal(t *testing.T, f fixture, automationID string, want int) []controlplane.AutomationDelivery {
	t.Helper()
	var ds []controlplane.AutomationDelivery
	require.Eventually(t, func() bool {
		var err error
		ds, _, err = f.store.ListAutomationDeliveries(context.Background(), f.project, automationID, "", 0, 100)
		require.NoError(t, err)
		if len(ds) != want {
			return false
		}
		for _, d := range ds {
			if d.Status == controlplane.DeliveryPending {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	return ds
}

func TestWorkerSignsAndDeliversPromptEvents(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	a, secret := f.automation(t, rc.srv.URL+"/hook")
	rc.secret = secret
	startWorker(t, f, f.store, fastConfig())

	_, err := f.store.CreatePrompt(context.Background(), f.project, controlplane.NewPrompt{Name: "greet",
		Prompt: json.RawMessage(`"Hello {{name}}"`), Labels: []string{"production"}, Tags: []string{"demo"}, CommitMessage: "first"})
	require.NoError(t, err)
	ds := waitFinal(t, f, a.ID, 1)
	assert.Equal(t, controlplane.DeliveryDelivered, ds[0].Status)
	assert.Equal(t, 1, ds[0].Attempts)
	assert.Equal(t, http.StatusOK, ds[0].StatusCode)

	got := rc.received()
	require.Len(t, got, 1)
	assert.True(t, got[0].valid, "the signature verifies with the secret shown at creation")
	assert.Equal(t, got[0].header.Get(SignatureHeader), got[0].header.Get(LangfuseSignatureHeader))
	assert.Equal(t, "Bearer t0ken", got[0].header.Get("Authorization"))
	assert.Equal(t, "application/json", got[0].header.Get("Content-Type"))
	assert.Equal(t, ds[0].EventID, got[0].header.Get(EventIDHeader))
	var ev struct {
		Type, Action, ProjectID, Timestamp string
		Prompt                             struct {
			Name, Type, CommitMessage string
			Version                   int
			Labels, Tags              []string
			Prompt                    string
			Config                    map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(got[0].body, &ev))
	assert.Equal(t, "prompt-version", ev.Type)
	assert.Equal(t, "created", ev.Action)
	assert.Equal(t, f.project, ev.ProjectID)
	assert.NotEmpty(t, ev.Timestamp)
	assert.Equal(t, "greet", ev.Prompt.Name)
	assert.Equal(t, 1, ev.Prompt.Version)
	assert.Equal(t, []string{"latest", "production"}, ev.Prompt.Labels)
	assert.Equal(t, []string{"demo"}, ev.Prompt.Tags)
	assert.Equal(t, "Hello {{name}}", ev.Prompt.Prompt)
	assert.Equal(t, "text", ev.Prompt.Type)
	assert.Equal(t, "first", ev.Prompt.CommitMessage)
	assert.Empty(t, ev.Prompt.Config)
	assert.False(t, verify("another secret", got[0].header.Get(SignatureHeader), got[0].body))
}

func TestWorkerRetriesServerErrorsThenDelivers(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, http.StatusInternalServerError, http.StatusTooManyRequests)
	a, secret := f.automation(t, rc.srv.URL)
	rc.secret = secret
	startWorker(t, f, f.store, fastConfig())

	_, err := f.store.EnqueueTestDelivery(context.Background(), f.project, a.ID)
	require.NoError(t, err)
	ds := waitFinal(t, f, a.ID, 1)
	assert.Equal(t, controlplane.DeliveryDelivered, ds[0].Status)
	assert.Equal(t, 3, ds[0].Attempts)
	got := rc.received()
	require.Len(t, got, 3)
	for _, g := range got {
		assert.True(t, g.valid)
		assert.Equal(t, ds[0].EventID, g.header.Get(EventIDHeader), "every retry carries the same event id")
	}
}

func TestWorkerGivesUp(t *testing.T) {
	f := newFixture(t)
	refused := newReceiver(t, http.StatusBadRequest)
	down := newReceiver(t, 503, 503, 503, 503)
	a, _ := f.automation(t, refused.srv.URL)
	b, _ := f.automation(t, down.srv.URL)
	startWorker(t, f, f.store, fastConfig())
	ctx := context.Background()
	_, err := f.store.EnqueueTestDelivery(ctx, f.project, a.ID)
	require.NoError(t, err)
	_, err = f.store.EnqueueTestDelivery(ctx, f.project, b.ID)
	require.NoError(t, err)

	ds := waitFinal(t, f, a.ID, 1)
	assert.Equal(t, controlplane.DeliveryFailed, ds[0].Status, "a 400 fails at once")
	assert.Equal(t, 1, ds[0].Attempts)
	assert.Equal(t, http.StatusBadRequest, ds[0].StatusCode)
	assert.Contains(t, ds[0].Error, "answer 400")
	assert.Len(t, refused.received(), 1)

	ds = waitFinal(t, f, b.ID, 1)
	assert.Equal(t, controlplane.DeliveryFailed, ds[0].Status)
	assert.Equal(t, 3, ds[0].Attempts, "max_attempts")
	assert.Equal(t, 503, ds[0].StatusCode)
	assert.Contains(t, ds[0].Error, "gave up after 3 attempts")
	assert.Len(t, down.received(), 3)
}

func TestWorkerHoldsToTheEgressPolicy(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	a, _ := f.automation(t, rc.srv.URL)
	// The policy changed since the automation was saved: loopback is no
	// longer listed.
	startWorker(t, f, f.store, fastConfig(), "10.0.0.0/8")
	_, err := f.store.EnqueueTestDelivery(context.Background(), f.project, a.ID)
	require.NoError(t, err)
	ds := waitFinal(t, f, a.ID, 1)
	assert.Equal(t, controlplane.DeliveryFailed, ds[0].Status)
	assert.Equal(t, 1, ds[0].Attempts, "a refusal is not retried")
	assert.Contains(t, ds[0].Error, "not listed in "+egress.WebhookKey)
	assert.Empty(t, rc.received())
}

func TestWorkerSkipsSwitchedOffAutomations(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	a, _ := f.automation(t, rc.srv.URL)
	ctx := context.Background()
	_, err := f.store.CreatePrompt(ctx, f.project, controlplane.NewPrompt{Name: "p", Prompt: json.RawMessage(`"x"`)})
	require.NoError(t, err)
	_, err = f.store.UpdateAutomation(ctx, f.box, f.project, a.ID, controlplane.AutomationUpdate{Active: new(false)})
	require.NoError(t, err)
	_, err = f.store.EnqueueTestDelivery(ctx, f.project, a.ID)
	require.NoError(t, err)
	startWorker(t, f, f.store, fastConfig())

	ds := waitFinal(t, f, a.ID, 2)
	byType := map[string]controlplane.AutomationDelivery{}
	for _, d := range ds {
		byType[d.EventType] = d
	}
	assert.Equal(t, controlplane.DeliveryFailed, byType["created"].Status, "queued before it was switched off")
	assert.Contains(t, byType["created"].Error, "switched off")
	assert.Equal(t, controlplane.DeliveryDelivered, byType["test"].Status, "a test is sent anyway")
	assert.Len(t, rc.received(), 1)
}

// The outbox survives the process: an event written while no worker runs
// (or before one died) is delivered once workers start, exactly once,
// however many processes share the database.
func TestOutboxSurvivesARestart(t *testing.T) {
	for name, dsn := range map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "cp.db") },
		"postgres": pgtest.DSN,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixtureAt(t, dsn(t))
			rc := newReceiver(t)
			a, secret := f.automation(t, rc.srv.URL)
			rc.secret = secret
			for i := range 5 {
				_, err := f.store.CreatePrompt(context.Background(), f.project, controlplane.NewPrompt{Name: "p" + strconv.Itoa(i),
					Prompt: json.RawMessage(`"x"`)})
				require.NoError(t, err)
			}
			require.NoError(t, f.store.Close())

			// Two new processes open the same database.
			first, second := openStore(t, f.dsn), openStore(t, f.dsn)
			f.store = first
			w1 := startWorker(t, f, first, fastConfig())
			w2 := startWorker(t, f, second, fastConfig())
			ds := waitFinal(t, f, a.ID, 5)
			w1.Stop()
			w2.Stop()
			events := map[string]bool{}
			for _, d := range ds {
				assert.Equal(t, controlplane.DeliveryDelivered, d.Status)
				assert.Equal(t, 1, d.Attempts)
				events[d.EventID] = true
			}
			got := rc.received()
			require.Len(t, got, 5, "two processes, each event sent once")
			for _, g := range got {
				assert.True(t, g.valid)
				assert.True(t, events[g.header.Get(EventIDHeader)])
				delete(events, g.header.Get(EventIDHeader))
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	cfg := NewDefaultConfig()
	var total time.Duration
	for attempt := 1; attempt < cfg.MaxAttempts; attempt++ {
		want := cfg.RetryBackoff << (attempt - 1)
		got := Backoff(cfg, attempt)
		assert.InDelta(t, float64(want), float64(got), 0.2*float64(want)+1, "attempt %d", attempt)
		total += want
	}
	assert.Equal(t, 30*time.Minute, total, "the defaults retry over about half an hour")
	assert.LessOrEqual(t, Backoff(cfg, 30), time.Duration(1.2*float64(cfg.MaxRetryBackoff)))
}

func TestSign(t *testing.T) {
	// A known vector: HMAC-SHA256("secret", "1700000000.{}").
	mac := hmac.New(sha256.New, []byte("secret"))
	mac.Write([]byte("1700000000.{}"))
	assert.Equal(t, "t=1700000000,v1="+hex.EncodeToString(mac.Sum(nil)), Sign("secret", time.Unix(1700000000, 0), []byte("{}")))
}

func TestWorkerWithoutTheEncryptionKey(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	a, _ := f.automation(t, rc.srv.URL)
	_, err := f.store.EnqueueTestDelivery(context.Background(), f.project, a.ID)
	require.NoError(t, err)
	policy, err := egress.Webhooks([]string{"127.0.0.1"})
	require.NoError(t, err)
	w, err := NewWorker(fastConfig(), f.store, nil, policy, zap.NewNop())
	require.NoError(t, err)
	w.Start()
	t.Cleanup(w.Stop)
	ds := waitFinal(t, f, a.ID, 1)
	assert.Equal(t, controlplane.DeliveryFailed, ds[0].Status)
	assert.Equal(t, 1, ds[0].Attempts, "it cannot sign, and will not until restarted with the key")
	assert.Contains(t, ds[0].Error, secretbox.EncryptionKeyEnv)
	assert.Empty(t, rc.received())
}
