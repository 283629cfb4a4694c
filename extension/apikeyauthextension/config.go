package apikeyauthextension // import "github.com/glassbox-dev/glassbox/extension/apikeyauthextension"

import (
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
)

// Config configures the API-key authenticator.
type Config struct {
	// Keys is a static list of project keys, checked before the Verifier.
	Keys []KeyConfig `mapstructure:"keys"`

	// Verifier names another extension that implements apikey.Verifier (the
	// control-plane key store). Keys not in the static list are checked there.
	Verifier *component.ID `mapstructure:"verifier"`

	// CacheTTL is how long a verified key pair is trusted without asking the
	// Verifier again; a revoked key keeps working for at most this long.
	// Zero disables the cache.
	CacheTTL time.Duration `mapstructure:"cache_ttl"`

	// NegativeCacheTTL is how long a refused key pair is refused without
	// asking the Verifier again, so a client retrying a bad key cannot load
	// the key store. Zero disables it.
	NegativeCacheTTL time.Duration `mapstructure:"negative_cache_ttl"`

	// MaxCacheEntries bounds the memory the caches may use.
	MaxCacheEntries int `mapstructure:"max_cache_entries"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// KeyConfig is one static project key pair. Exactly one of SecretSHA256 and
// Secret is set; a plaintext Secret is hashed at Start and not kept.
type KeyConfig struct {
	PublicKey string `mapstructure:"public_key"`
	// SecretSHA256 is the hex SHA-256 of the secret key (apikey.HashSecret).
	SecretSHA256 string `mapstructure:"secret_sha256"`
	// Secret is the plaintext secret key, typically "${env:...}".
	Secret         configopaque.String `mapstructure:"secret"`
	ProjectID      string              `mapstructure:"project_id"`
	OrganizationID string              `mapstructure:"organization_id"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

var (
	errNoKeySource       = errors.New("neither keys nor verifier is configured: every request would be refused")
	errMissingPublicKey  = errors.New("public_key is required")
	errMissingProjectID  = errors.New("project_id is required")
	errNoSecret          = errors.New("one of secret_sha256 and secret is required")
	errBothSecrets       = errors.New("secret_sha256 and secret are mutually exclusive")
	errMalformedHash     = errors.New("secret_sha256 must be 64 hexadecimal characters")
	errNegativeTTL       = errors.New("cache_ttl must not be negative")
	errNegativeNegTTL    = errors.New("negative_cache_ttl must not be negative")
	errNonPositiveMaxLen = errors.New("max_cache_entries must be positive")
)

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs error
	if len(cfg.Keys) == 0 && cfg.Verifier == nil {
		errs = errors.Join(errs, errNoKeySource)
	}
	seen := make(map[string]int, len(cfg.Keys))
	for i, k := range cfg.Keys {
		for _, err := range k.problems() {
			errs = errors.Join(errs, fmt.Errorf("keys[%d]: %w", i, err))
		}
		if k.PublicKey == "" {
			continue
		}
		if first, dup := seen[k.PublicKey]; dup {
			errs = errors.Join(errs, fmt.Errorf("keys[%d]: public_key %q duplicates keys[%d]", i, k.PublicKey, first))
			continue
		}
		seen[k.PublicKey] = i
	}
	if cfg.CacheTTL < 0 {
		errs = errors.Join(errs, errNegativeTTL)
	}
	if cfg.NegativeCacheTTL < 0 {
		errs = errors.Join(errs, errNegativeNegTTL)
	}
	if cfg.MaxCacheEntries <= 0 {
		errs = errors.Join(errs, errNonPositiveMaxLen)
	}
	return errs
}

func (k KeyConfig) problems() []error {
	var errs []error
	if k.PublicKey == "" {
		errs = append(errs, errMissingPublicKey)
	}
	if k.ProjectID == "" {
		errs = append(errs, errMissingProjectID)
	}
	switch {
	case k.SecretSHA256 == "" && k.Secret == "":
		errs = append(errs, errNoSecret)
	case k.SecretSHA256 != "" && k.Secret != "":
		errs = append(errs, errBothSecrets)
	case k.SecretSHA256 != "":
		if b, err := hex.DecodeString(k.SecretSHA256); err != nil || len(b) != 32 {
			errs = append(errs, errMalformedHash)
		}
	}
	return errs
}
