// Package envprovider is the collector's "env" configuration provider
// (go.opentelemetry.io/collector/confmap/provider/envprovider) with one
// addition from the POSIX shell: ${env:NAME:?message} fails the
// configuration, naming NAME and giving the message, when NAME is unset or
// empty. A setting the collector cannot do without then says which variable
// to set, instead of failing later in the component that got an empty value
// (the load-balancing exporter's "no endpoints specified for the static
// resolver"). Every other reference, ${env:NAME} and ${env:NAME:-default},
// is handed to the collector's provider unchanged.
package envprovider // import "github.com/glassbox-dev/glassbox/provider/envprovider"

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
)

const (
	schemeName     = "env"
	requiredSuffix = ":?"
)

// NewFactory returns the factory of the "env" provider; it replaces the
// collector's in a distribution.
func NewFactory() confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(ps confmap.ProviderSettings) confmap.Provider {
		return &provider{Provider: envprovider.NewFactory().Create(ps)}
	})
}

type provider struct {
	confmap.Provider // the collector's env provider
}

// Retrieve checks a required variable, then reads it as the collector's
// provider does.
func (p *provider) Retrieve(ctx context.Context, uri string, watcher confmap.WatcherFunc) (*confmap.Retrieved, error) {
	name, message, required := requiredRef(uri)
	if !required {
		return p.Provider.Retrieve(ctx, uri, watcher)
	}
	// The collector's provider checks the name and reads the value.
	r, err := p.Provider.Retrieve(ctx, schemeName+":"+name, watcher)
	if err != nil || os.Getenv(name) != "" {
		return r, err
	}
	if message == "" {
		return nil, fmt.Errorf("environment variable %s is required but not set", name)
	}
	return nil, fmt.Errorf("environment variable %s is required but not set: %s", name, message)
}

// requiredRef splits env:NAME:?message; required is false for any other
// form, including env:NAME:-default whose default holds ":?".
func requiredRef(uri string) (name, message string, required bool) {
	ref, ok := strings.CutPrefix(uri, schemeName+":")
	if !ok {
		return "", "", false
	}
	i := strings.IndexByte(ref, ':')
	if i < 0 || !strings.HasPrefix(ref[i:], requiredSuffix) {
		return "", "", false
	}
	return ref[:i], strings.TrimSpace(ref[i+len(requiredSuffix):]), true
}
