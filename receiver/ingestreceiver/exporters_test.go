package ingestreceiver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/glassbox-dev/glassbox/extension/apikeyauthextension"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// startWithAuthExtension runs the receiver behind a real glassbox_auth.
func startWithAuthExtension(t *testing.T, sink *consumertest.TracesSink) *ingestReceiver {
	t.Helper()
	f := apikeyauthextension.NewFactory()
	extCfg := f.CreateDefaultConfig().(*apikeyauthextension.Config)
	extCfg.Keys = []apikeyauthextension.KeyConfig{{PublicKey: "pk-lf-real", Secret: "sk-lf-real", ProjectID: "proj-real"}}
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), extCfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })

	r, err := newIngestReceiver(grpcConfig(), receivertest.NewNopSettings(Type), sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), newHost(map[component.ID]component.Component{authID: ext})))
	t.Cleanup(func() { require.NoError(t, r.Shutdown(context.Background())) })
	return r
}

// emit sends three spans through an OpenTelemetry SDK exporter.
func emit(t *testing.T, exp sdktrace.SpanExporter) {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, root := tp.Tracer("test").Start(context.Background(), "root")
	_, child := tp.Tracer("test").Start(ctx, "child")
	child.End()
	_, sibling := tp.Tracer("test").Start(ctx, "sibling")
	sibling.End()
	root.End()
	require.NoError(t, tp.Shutdown(context.Background()))
}

func assertStamped(t *testing.T, sink *consumertest.TracesSink, spans int) {
	t.Helper()
	require.Equal(t, spans, sink.SpanCount())
	for _, td := range sink.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			v, ok := rs.Resource().Attributes().Get(model.ProjectIDAttribute)
			require.True(t, ok)
			assert.Equal(t, "proj-real", v.Str())
		}
	}
}

func TestOTelSDKExporters(t *testing.T) {
	auth := map[string]string{"Authorization": basic("pk-lf-real", "sk-lf-real")}
	tests := []struct {
		name string
		new  func(endpoint string) (sdktrace.SpanExporter, error)
		grpc bool
	}{
		{name: "http protobuf gzip", new: func(endpoint string) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(context.Background(), otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure(),
				otlptracehttp.WithURLPath(TracesPath), otlptracehttp.WithHeaders(auth),
				otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}},
		{name: "http json", new: func(endpoint string) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(context.Background(), otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure(),
				otlptracehttp.WithURLPath(TracesPath), otlptracehttp.WithHeaders(auth),
				otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
		}},
		{name: "grpc gzip", grpc: true, new: func(endpoint string) (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure(),
				otlptracegrpc.WithHeaders(map[string]string{"authorization": auth["Authorization"]}),
				otlptracegrpc.WithCompressor("gzip"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := new(consumertest.TracesSink)
			r := startWithAuthExtension(t, sink)
			endpoint := r.httpAddr.String()
			if tt.grpc {
				endpoint = r.grpcAddr.String()
			}
			exp, err := tt.new(endpoint)
			require.NoError(t, err)
			emit(t, exp)
			assertStamped(t, sink, 3)
		})
	}
}

func TestOTelSDKExporterWithBadKey(t *testing.T) {
	sink := new(consumertest.TracesSink)
	r := startWithAuthExtension(t, sink)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpoint(r.httpAddr.String()), otlptracehttp.WithInsecure(),
		otlptracehttp.WithURLPath(TracesPath), otlptracehttp.WithHeaders(map[string]string{"Authorization": basic("pk-lf-real", "wrong")}),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	require.NoError(t, err)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tp.Tracer("test").Start(context.Background(), "root")
	span.End()
	require.NoError(t, tp.Shutdown(context.Background()))

	err = exp.ExportSpans(context.Background(), rec.Ended())
	require.ErrorContains(t, err, "401 Unauthorized")
	assert.Contains(t, err.Error(), "Invalid credentials. Confirm that you've configured the correct host.")
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Zero(t, sink.SpanCount())
}
