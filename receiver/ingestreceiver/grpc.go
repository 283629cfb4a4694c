package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc/metadata"
)

// grpcTraces serves OTLP/gRPC with the same authentication (the
// "authorization" metadata), stamping and validation as the HTTP path.
type grpcTraces struct {
	ptraceotlp.UnimplementedGRPCServer
	r *ingestReceiver
}

func (g *grpcTraces) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	resp := ptraceotlp.NewExportResponse()
	md, _ := metadata.FromIncomingContext(ctx)
	principal, err := g.r.authenticate(ctx, first(md.Get("authorization")))
	if err != nil {
		return resp, grpcError(err)
	}
	version := first(md.Get("x-langfuse-ingestion-version"))
	if version == "" {
		version = first(md.Get("x_langfuse_ingestion_version"))
	}
	if err = checkIngestionVersion(version); err != nil {
		return resp, grpcError(err)
	}
	rej, err := g.r.ingest(ctx, g.r.obsGRPC, formatProtobuf, principal.ProjectID, req.Traces())
	if err != nil {
		return resp, grpcError(err)
	}
	if rej.count > 0 {
		resp.PartialSuccess().SetRejectedSpans(rej.count)
		resp.PartialSuccess().SetErrorMessage(rej.message())
	}
	return resp, nil
}

func first(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}
