package main

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/provider/envprovider"
)

// loadConfig reads a YAML configuration over the defaults. References to
// the environment are resolved by the collector's own configuration
// resolver with the distribution's env provider, so that one file syntax and
// one set of variables serve both binaries: ${env:NAME}, ${NAME},
// ${env:NAME:-default}, ${env:NAME:?message} and $$ for a literal $.
func loadConfig(path string) (apiserver.Config, error) {
	cfg := apiserver.NewDefaultConfig()
	if path == "" {
		return cfg, cfg.Validate()
	}
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + path},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	if err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	conf, err := resolver.Resolve(context.Background())
	if err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	if err := conf.Unmarshal(&cfg); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}
