package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
)

// Config configures the ingest receiver.
type Config struct {
	// HTTP is the listener for OTLP/HTTP at the Langfuse paths, and for the
	// fallback handler. Its auth, max_request_body_size and
	// compression_algorithms are owned by this receiver and must stay unset.
	HTTP confighttp.ServerConfig `mapstructure:"http"`

	// GRPC is an optional OTLP/gRPC listener with the same authentication,
	// stamping and validation. When its max_recv_msg_size_mib is unset it
	// takes max_decompressed_body_bytes.
	GRPC configoptional.Optional[configgrpc.ServerConfig] `mapstructure:"grpc"`

	// Authenticator names the extension that verifies key pairs; it must
	// implement apikey.Verifier (glassbox_auth does).
	Authenticator component.ID `mapstructure:"authenticator"`

	// Fallback names an extension implementing HandlerProvider. It serves
	// every path this receiver does not own, so one port carries ingestion
	// and the REST API. Without it those paths answer 404.
	Fallback *component.ID `mapstructure:"fallback"`

	// MaxRequestBodyBytes limits a request body as sent (compressed).
	MaxRequestBodyBytes int64 `mapstructure:"max_request_body_bytes"`

	// MaxDecompressedBodyBytes limits a request body after decompression, so
	// that a small compressed body cannot expand without bound.
	MaxDecompressedBodyBytes int64 `mapstructure:"max_decompressed_body_bytes"`

	// MaxSpanBytes bounds one span's names and attribute values. A larger
	// span has its largest string values (inputs, outputs, messages)
	// truncated to fit, and says so in its metadata; one that cannot fit is
	// refused through OTLP partial success. Keep it below the exporter's
	// batch max_size, or the batcher would drop the span after it was
	// acknowledged.
	MaxSpanBytes int64 `mapstructure:"max_span_bytes"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

var (
	errNoAuthenticator     = errors.New("authenticator is required")
	errHTTPAuth            = errors.New("http::auth must not be set: requests are authenticated through authenticator")
	errGRPCAuth            = errors.New("grpc::auth must not be set: requests are authenticated through authenticator")
	errHTTPBodySize        = errors.New("http::max_request_body_size must not be set: use max_request_body_bytes")
	errHTTPCompression     = errors.New("http::compression_algorithms must not be set: the receiver decodes gzip, zstd and deflate itself")
	errBodyLimit           = errors.New("max_request_body_bytes must be positive")
	errDecompressedLimit   = errors.New("max_decompressed_body_bytes must be positive")
	errDecompressedBelowIn = errors.New("max_decompressed_body_bytes must not be below max_request_body_bytes")
	errSpanLimit           = errors.New("max_span_bytes must be at least 65536")
)

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs error
	if cfg.Authenticator.Type().String() == "" {
		errs = errors.Join(errs, errNoAuthenticator)
	}
	if cfg.HTTP.Auth.HasValue() {
		errs = errors.Join(errs, errHTTPAuth)
	}
	if cfg.HTTP.MaxRequestBodySize != 0 {
		errs = errors.Join(errs, errHTTPBodySize)
	}
	if cfg.HTTP.CompressionAlgorithms != nil {
		errs = errors.Join(errs, errHTTPCompression)
	}
	if g := cfg.GRPC.Get(); g != nil && g.Auth.HasValue() {
		errs = errors.Join(errs, errGRPCAuth)
	}
	if cfg.MaxRequestBodyBytes <= 0 {
		errs = errors.Join(errs, errBodyLimit)
	}
	if cfg.MaxDecompressedBodyBytes <= 0 {
		errs = errors.Join(errs, errDecompressedLimit)
	} else if cfg.MaxDecompressedBodyBytes < cfg.MaxRequestBodyBytes {
		errs = errors.Join(errs, errDecompressedBelowIn)
	}
	if cfg.MaxSpanBytes < minSpanBytes {
		errs = errors.Join(errs, errSpanLimit)
	}
	return errs
}
