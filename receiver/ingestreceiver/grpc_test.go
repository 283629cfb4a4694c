package ingestreceiver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/glassbox-dev/glassbox/internal/model"
)

func grpcConfig() *Config {
	cfg := testConfig()
	cfg.GRPC.GetOrInsertDefault().NetAddr.Endpoint = "127.0.0.1:0"
	return cfg
}

// grpcClient dials the receiver's gRPC listener.
func grpcClient(t *testing.T, s started) ptraceotlp.GRPCClient {
	t.Helper()
	conn, err := grpc.NewClient(s.r.grpcAddr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close()) })
	return ptraceotlp.NewGRPCClient(conn)
}

func withMetadata(kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), kv...)
}

func startGRPC(t *testing.T, next consumer.Traces, tt *componenttest.Telemetry) (started, ptraceotlp.GRPCClient) {
	s := startReceiver(t, grpcConfig(), next, tt, nil)
	return s, grpcClient(t, s)
}

func TestGRPCAuthentication(t *testing.T) {
	sink := new(consumertest.TracesSink)
	s, c := startGRPC(t, sink, nil)
	req := ptraceotlp.NewExportRequestFromTraces(newTraces(2))
	tests := []struct {
		name string
		ctx  context.Context
		code codes.Code
		msg  string
	}{
		{name: "missing", ctx: context.Background(), code: codes.Unauthenticated, msg: "No authorization header"},
		{name: "wrong secret", ctx: withMetadata("authorization", basic("pk-lf-1", "nope")), code: codes.Unauthenticated,
			msg: "Invalid credentials. Confirm that you've configured the correct host."},
		{name: "organization key", ctx: withMetadata("authorization", basic("pk-lf-org", "sk-lf-org")), code: codes.PermissionDenied},
		{name: "ingestion version", ctx: withMetadata("authorization", basic("pk-lf-1", "sk-lf-1"), "x-langfuse-ingestion-version", "5"),
			code: codes.InvalidArgument, msg: `Unsupported x-langfuse-ingestion-version: "5". Maximum supported: "4".`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Export(tt.ctx, req)
			st, ok := status.FromError(err)
			require.True(t, ok)
			assert.Equal(t, tt.code, st.Code())
			if tt.msg != "" {
				assert.Equal(t, tt.msg, st.Message())
			}
		})
	}
	assert.Zero(t, sink.SpanCount())

	s.verifier.fail(errors.New("down"))
	_, err := c.Export(withMetadata("authorization", basic("pk-lf-1", "sk-lf-1")), req)
	assert.Equal(t, codes.Unavailable, status.Code(err))
}

func TestGRPCExport(t *testing.T) {
	tt := componenttestTelemetry(t)
	sink := new(consumertest.TracesSink)
	_, c := startGRPC(t, sink, tt)
	ctx := withMetadata("authorization", basic("pk-lf-1", "sk-lf-1"), "x-langfuse-ingestion-version", "4")

	td := newTraces(4)
	td.ResourceSpans().At(0).Resource().Attributes().PutStr(model.ProjectIDAttribute, "spoofed")
	resp, err := c.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	require.NoError(t, err)
	assert.Zero(t, resp.PartialSuccess().RejectedSpans())
	require.Len(t, sink.AllTraces(), 1)
	for _, rs := range sink.AllTraces()[0].ResourceSpans().All() {
		v, ok := rs.Resource().Attributes().Get(model.ProjectIDAttribute)
		require.True(t, ok)
		assert.Equal(t, testProject, v.Str())
	}

	resp, err = c.Export(ctx, ptraceotlp.NewExportRequestFromTraces(invalidSpans()))
	require.NoError(t, err)
	assert.Equal(t, int64(4), resp.PartialSuccess().RejectedSpans())
	assert.Equal(t, rejectionMessage, resp.PartialSuccess().ErrorMessage())
	assert.Equal(t, 6, sink.SpanCount())

	assert.Equal(t, int64(6), sumMetric(t, tt, "otelcol_receiver_accepted_spans"))
	assert.Equal(t, int64(4), sumMetric(t, tt, "otelcol_receiver_refused_spans"))
}

func TestGRPCConsumerErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code codes.Code
	}{
		{name: "backpressure", err: errors.New("memory limit exceeded"), code: codes.Unavailable},
		{name: "permanent", err: consumerPermanent("cannot map"), code: codes.InvalidArgument},
		{name: "status kept", err: status.Error(codes.ResourceExhausted, "full"), code: codes.ResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := startGRPC(t, consumertest.NewErr(tt.err), nil)
			_, err := c.Export(withMetadata("authorization", basic("pk-lf-1", "sk-lf-1")), ptraceotlp.NewExportRequestFromTraces(newTraces(2)))
			assert.Equal(t, tt.code, status.Code(err))
		})
	}
}

func TestGRPCMessageLimitFollowsDecompressedLimit(t *testing.T) {
	cfg := grpcConfig()
	cfg.MaxRequestBodyBytes = 1 << 20
	cfg.MaxDecompressedBodyBytes = 1 << 20
	s := startReceiver(t, cfg, consumertest.NewNop(), nil, nil)
	c := grpcClient(t, s)
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.Attributes().PutStr("big", string(make([]byte, 2<<20)))
	_, err := c.Export(withMetadata("authorization", basic("pk-lf-1", "sk-lf-1")), ptraceotlp.NewExportRequestFromTraces(td))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
}

func consumerPermanent(msg string) error {
	return consumererror.NewPermanent(errors.New(msg))
}
