package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
)

const (
	typeStr = "glassbox_ingest"

	defaultHTTPEndpoint    = "127.0.0.1:3000"
	defaultGRPCEndpoint    = "127.0.0.1:4317"
	defaultMaxBodyBytes    = 16 << 20
	defaultMaxDecompressed = 64 << 20
	// defaultMaxSpanBytes is half the exporter's default batch max_size
	// (8 MiB), which also counts the resource and the request's framing.
	defaultMaxSpanBytes      = 4 << 20
	defaultAuthenticatorType = "glassbox_auth"
)

// Type is the component type of the receiver, glassbox_ingest.
var Type = component.MustNewType(typeStr)

// NewFactory returns the factory of the glassbox_ingest receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(Type, createDefaultConfig,
		receiver.WithTraces(createTraces, component.StabilityLevelAlpha))
}

func createDefaultConfig() component.Config {
	httpCfg := confighttp.NewDefaultServerConfig()
	httpCfg.NetAddr.Endpoint = defaultHTTPEndpoint
	grpcCfg := configgrpc.NewDefaultServerConfig()
	grpcCfg.NetAddr.Endpoint = defaultGRPCEndpoint
	return &Config{
		HTTP:                     httpCfg,
		GRPC:                     configoptional.Default(grpcCfg),
		Authenticator:            component.MustNewID(defaultAuthenticatorType),
		MaxRequestBodyBytes:      defaultMaxBodyBytes,
		MaxDecompressedBodyBytes: defaultMaxDecompressed,
		MaxSpanBytes:             defaultMaxSpanBytes,
	}
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	return newIngestReceiver(cfg.(*Config), set, next)
}
