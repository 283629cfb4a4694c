package ingestreceiver

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

var (
	authID     = component.MustNewID("glassbox_auth")
	fallbackID = component.MustNewID("glassbox_api")
)

const (
	testProject = "proj-1"
	testVersion = "1.2.3-test"
)

// fakeVerifier is a key store extension: "public:secret" -> principal.
type fakeVerifier struct {
	component.StartFunc
	component.ShutdownFunc

	mu    sync.Mutex
	pairs map[string]apikey.Principal
	err   error
}

func newFakeVerifier() *fakeVerifier {
	return &fakeVerifier{pairs: map[string]apikey.Principal{
		"pk-lf-1:sk-lf-1":     {PublicKey: "pk-lf-1", ProjectID: testProject, Scope: apikey.ScopeProject},
		"pk-lf-org:sk-lf-org": {PublicKey: "pk-lf-org", OrganizationID: "org-1", Scope: apikey.ScopeOrganization},
	}}
}

func (v *fakeVerifier) Verify(_ context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err != nil {
		return apikey.Principal{}, v.err
	}
	p, ok := v.pairs[publicKey+":"+secretKey]
	if !ok {
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	return p, nil
}

func (v *fakeVerifier) fail(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.err = err
}

type fakeFallback struct {
	component.StartFunc
	component.ShutdownFunc
}

func (fakeFallback) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "fallback "+r.URL.Path)
	})
}

type fakeHost struct {
	component.Host
	extensions map[component.ID]component.Component
}

func (h fakeHost) GetExtensions() map[component.ID]component.Component { return h.extensions }

func newHost(exts map[component.ID]component.Component) component.Host {
	return fakeHost{Host: componenttest.NewNopHost(), extensions: exts}
}

func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.HTTP.NetAddr.Endpoint = "127.0.0.1:0"
	return cfg
}

type started struct {
	r        *ingestReceiver
	verifier *fakeVerifier
	url      string
}

// startReceiver starts a receiver on a free port with a fake verifier.
func startReceiver(t *testing.T, cfg *Config, next consumer.Traces, tt *componenttest.Telemetry, extra map[component.ID]component.Component) started {
	t.Helper()
	set := receivertest.NewNopSettings(Type)
	set.BuildInfo.Version = testVersion
	if tt != nil {
		set.TelemetrySettings = tt.NewTelemetrySettings()
	}
	r, err := newIngestReceiver(cfg, set, next)
	require.NoError(t, err)
	v := newFakeVerifier()
	exts := map[component.ID]component.Component{authID: v}
	for id, ext := range extra {
		exts[id] = ext
	}
	require.NoError(t, r.Start(context.Background(), newHost(exts)))
	t.Cleanup(func() { require.NoError(t, r.Shutdown(context.Background())) })
	return started{r: r, verifier: v, url: "http://" + r.httpAddr.String()}
}

func basic(publicKey, secretKey string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(publicKey+":"+secretKey))
}

// post sends body to path with the test key unless headers set Authorization.
func post(t *testing.T, url string, body []byte, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", basic("pk-lf-1", "sk-lf-1"))
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// newTraces builds n spans over two resources, all valid.
func newTraces(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc-"+string(rune('a'+r)))
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("langfuse-sdk")
		for i := range n / 2 {
			s := ss.Spans().AppendEmpty()
			s.SetName("span")
			s.SetTraceID(pcommon.TraceID{1, byte(r), byte(i), 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
			s.SetSpanID(pcommon.SpanID{1, byte(r), byte(i + 1), 4, 5, 6, 7, 8})
			s.SetStartTimestamp(1_700_000_000_000_000_000)
			s.SetEndTimestamp(1_700_000_000_100_000_000)
			s.Attributes().PutStr("langfuse.observation.type", "generation")
		}
	}
	return td
}

func TestFactoryLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, Type, f.Type())
	cfg := testConfig()
	cfg.GRPC.GetOrInsertDefault().NetAddr.Endpoint = "127.0.0.1:0"
	rcv, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, rcv.Shutdown(context.Background()), "shutdown before start")
	require.NoError(t, rcv.Start(context.Background(), newHost(map[component.ID]component.Component{authID: newFakeVerifier()})))
	require.NoError(t, rcv.Shutdown(context.Background()))
	require.NoError(t, rcv.Shutdown(context.Background()), "second shutdown")
}

func TestStartErrors(t *testing.T) {
	notAnything := struct {
		component.StartFunc
		component.ShutdownFunc
	}{}
	tests := []struct {
		name string
		exts map[component.ID]component.Component
		fb   bool
		want string
	}{
		{name: "no authenticator", exts: map[component.ID]component.Component{}, want: `authenticator extension "glassbox_auth" is not configured`},
		{name: "not a verifier", exts: map[component.ID]component.Component{authID: notAnything}, want: "cannot verify API keys"},
		{name: "no fallback", exts: map[component.ID]component.Component{authID: newFakeVerifier()}, fb: true, want: `fallback extension "glassbox_api" is not configured`},
		{name: "fallback without handler", exts: map[component.ID]component.Component{authID: newFakeVerifier(), fallbackID: notAnything}, fb: true, want: "does not serve HTTP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.fb {
				id := fallbackID
				cfg.Fallback = &id
			}
			r, err := newIngestReceiver(cfg, receivertest.NewNopSettings(Type), consumertest.NewNop())
			require.NoError(t, err)
			require.ErrorContains(t, r.Start(context.Background(), newHost(tt.exts)), tt.want)
			require.NoError(t, r.Shutdown(context.Background()))
		})
	}

	t.Run("port in use", func(t *testing.T) {
		s := startReceiver(t, testConfig(), consumertest.NewNop(), nil, nil)
		cfg := testConfig()
		cfg.HTTP.NetAddr.Endpoint = s.r.httpAddr.String()
		r, err := newIngestReceiver(cfg, receivertest.NewNopSettings(Type), consumertest.NewNop())
		require.NoError(t, err)
		err = r.Start(context.Background(), newHost(map[component.ID]component.Component{authID: newFakeVerifier()}))
		require.ErrorContains(t, err, "listen on")
		require.NoError(t, r.Shutdown(context.Background()))
	})
}

func TestShutdownWaitsForRequestsInFlight(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	blocking := consumerFunc(func(context.Context, ptrace.Traces) error {
		close(entered)
		<-release
		return nil
	})
	set := receivertest.NewNopSettings(Type)
	r, err := newIngestReceiver(testConfig(), set, blocking)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), newHost(map[component.ID]component.Component{authID: newFakeVerifier()})))

	body, err := (&ptrace.JSONMarshaler{}).MarshalTraces(newTraces(2))
	require.NoError(t, err)
	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.httpAddr.String()+TracesPath, bytes.NewReader(body))
		req.Header.Set("Authorization", basic("pk-lf-1", "sk-lf-1"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	<-entered
	shutdown := make(chan error, 1)
	go func() { shutdown <- r.Shutdown(context.Background()) }()
	select {
	case <-shutdown:
		t.Fatal("shutdown returned while a request was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-shutdown)
	assert.Equal(t, http.StatusOK, <-status)
	http.DefaultClient.CloseIdleConnections()
}

type consumerFunc func(context.Context, ptrace.Traces) error

func (f consumerFunc) ConsumeTraces(ctx context.Context, td ptrace.Traces) error { return f(ctx, td) }

func (consumerFunc) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}
