package apikeyauthextension // import "github.com/glassbox-dev/glassbox/extension/apikeyauthextension"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
)

const (
	typeStr   = "glassbox_auth"
	scopeName = "github.com/glassbox-dev/glassbox/extension/apikeyauthextension"

	defaultCacheTTL         = 30 * time.Second
	defaultNegativeCacheTTL = 5 * time.Second
	defaultMaxCacheEntries  = 10000
)

// Type is the component type of the authenticator, glassbox_auth.
var Type = component.MustNewType(typeStr)

// NewFactory returns the factory of the glassbox_auth extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type, createDefaultConfig, createExtension, component.StabilityLevelAlpha)
}

func createDefaultConfig() component.Config {
	return &Config{
		CacheTTL:         defaultCacheTTL,
		NegativeCacheTTL: defaultNegativeCacheTTL,
		MaxCacheEntries:  defaultMaxCacheEntries,
	}
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newAuthenticator(cfg.(*Config), set)
}
