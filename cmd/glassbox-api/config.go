package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/glassbox-dev/glassbox/apiserver"
)

// envRef matches what expandEnv replaces: $$ (a literal $) and ${...}.
var envRef = regexp.MustCompile(`\$\$|\$\{([^}]*)\}`)

// expandEnv replaces ${env:NAME}, ${env:NAME:-default} and
// ${env:NAME:?message} (also without the env: prefix) as collector
// configuration files do, so one set of environment variables serves both;
// $$ stands for a literal $.
func expandEnv(text string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(text, func(m string) string {
		if m == "$$" {
			return "$"
		}
		ref := strings.TrimPrefix(m[2:len(m)-1], "env:")
		if name, message, required := strings.Cut(ref, ":?"); required && !strings.Contains(name, ":-") {
			// Required, as in the collector's files (provider/envprovider).
			if v := os.Getenv(name); v != "" {
				return v
			}
			if message = strings.TrimSpace(message); message != "" {
				name += " (" + message + ")"
			}
			missing = append(missing, name)
			return ""
		}
		name, def, hasDef := strings.Cut(ref, ":-")
		if v, ok := os.LookupEnv(name); ok && (v != "" || !hasDef) {
			return v
		}
		if !hasDef {
			missing = append(missing, name)
		}
		return def
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variables not set: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// loadConfig reads a YAML configuration over the defaults.
func loadConfig(path string) (apiserver.Config, error) {
	cfg := apiserver.NewDefaultConfig()
	if path == "" {
		return cfg, cfg.Validate()
	}
	raw, err := os.ReadFile(path) //nolint:gosec // the operator names the configuration file
	if err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	expanded, err := expandEnv(string(raw))
	if err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	retrieved, err := confmap.NewRetrievedFromYAML([]byte(expanded))
	if err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	conf, err := retrieved.AsConf()
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
