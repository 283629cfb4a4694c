package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

type ingestReceiver struct {
	cfg      *Config
	settings receiver.Settings
	next     consumer.Traces
	obsHTTP  *receiverhelper.ObsReport
	obsGRPC  *receiverhelper.ObsReport
	bodies   *bodyReader

	// Set by Start.
	verifier   apikey.Verifier
	httpServer *http.Server
	httpAddr   net.Addr
	grpcServer *grpc.Server
	grpcAddr   net.Addr
	serving    sync.WaitGroup
}

func newIngestReceiver(cfg *Config, set receiver.Settings, next consumer.Traces) (*ingestReceiver, error) {
	obsHTTP, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: set.ID, Transport: "http", ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	obsGRPC, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: set.ID, Transport: "grpc", ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	return &ingestReceiver{
		cfg:      cfg,
		settings: set,
		next:     next,
		obsHTTP:  obsHTTP,
		obsGRPC:  obsGRPC,
		bodies:   newBodyReader(cfg.MaxRequestBodyBytes, cfg.MaxDecompressedBodyBytes),
	}, nil
}

// Start resolves the verifier and the fallback, then listens.
func (r *ingestReceiver) Start(ctx context.Context, host component.Host) error {
	extensions := host.GetExtensions()
	ext, ok := extensions[r.cfg.Authenticator]
	if !ok {
		return fmt.Errorf("authenticator extension %q is not configured", r.cfg.Authenticator)
	}
	if r.verifier, ok = ext.(apikey.Verifier); !ok {
		return fmt.Errorf("extension %q cannot verify API keys", r.cfg.Authenticator)
	}
	var fallback http.Handler
	if id := r.cfg.Fallback; id != nil {
		ext, ok := extensions[*id]
		if !ok {
			return fmt.Errorf("fallback extension %q is not configured", id)
		}
		provider, ok := ext.(HandlerProvider)
		if !ok {
			return fmt.Errorf("extension %q does not serve HTTP (no Handler method)", id)
		}
		fallback = provider.Handler()
	}
	if err := r.startHTTP(ctx, host, r.newHandler(fallback)); err != nil {
		return err
	}
	if r.cfg.GRPC.HasValue() {
		if err := r.startGRPC(ctx, host); err != nil {
			return errors.Join(err, r.Shutdown(ctx))
		}
	}
	return nil
}

func (r *ingestReceiver) startHTTP(ctx context.Context, host component.Host, handler http.Handler) error {
	sc := r.cfg.HTTP
	sc.MaxRequestBodySize = r.cfg.MaxRequestBodyBytes
	// An empty, non-nil list turns confighttp's decompression off: the
	// handler decompresses itself, under its own two limits.
	sc.CompressionAlgorithms = []string{}
	errorHandler := confighttp.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, msg string, statusCode int) {
		writeJSONError(w, statusCode, msg)
	})
	srv, err := sc.ToServer(ctx, host.GetExtensions(), r.settings.TelemetrySettings, handler, errorHandler)
	if err != nil {
		return fmt.Errorf("create HTTP server: %w", err)
	}
	ln, err := sc.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sc.NetAddr.Endpoint, err)
	}
	r.httpServer, r.httpAddr = srv, ln.Addr()
	r.settings.Logger.Info("Starting HTTP server", zap.Stringer("endpoint", r.httpAddr))
	r.serving.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	})
	return nil
}

func (r *ingestReceiver) startGRPC(ctx context.Context, host component.Host) error {
	gc := *r.cfg.GRPC.Get()
	if gc.MaxRecvMsgSizeMiB == 0 {
		gc.MaxRecvMsgSizeMiB = int((r.cfg.MaxDecompressedBodyBytes + 1<<20 - 1) >> 20)
	}
	srv, err := gc.ToServer(ctx, host.GetExtensions(), r.settings.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("create gRPC server: %w", err)
	}
	ln, err := gc.NetAddr.Listen(ctx)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", gc.NetAddr.Endpoint, err)
	}
	ptraceotlp.RegisterGRPCServer(srv, &grpcTraces{r: r})
	r.grpcServer, r.grpcAddr = srv, ln.Addr()
	r.settings.Logger.Info("Starting gRPC server", zap.Stringer("endpoint", r.grpcAddr))
	r.serving.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	})
	return nil
}

// Shutdown lets requests in flight finish, within ctx's deadline, so that no
// data already accepted is lost. It is safe without Start and when repeated.
func (r *ingestReceiver) Shutdown(ctx context.Context) error {
	var err error
	if r.httpServer != nil {
		if err = r.httpServer.Shutdown(ctx); err != nil {
			err = errors.Join(err, r.httpServer.Close())
		}
	}
	if r.grpcServer != nil {
		stopped := make(chan struct{})
		go func() {
			r.grpcServer.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			r.grpcServer.Stop()
			<-stopped
		}
	}
	r.serving.Wait()
	if r.httpServer != nil || r.grpcServer != nil {
		r.settings.Logger.Info("Stopped")
	}
	return err
}
