package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Config is an adapter's settings beyond the base URL, as a connection's
// config object holds them. Each adapter takes only its own keys.
type Config struct {
	// UseResponsesAPI sends OpenAI calls to the Responses API
	// (POST /responses) instead of chat completions.
	UseResponsesAPI bool `json:"useResponsesApi,omitempty"`
	// APIVersion is Azure OpenAI's api-version query parameter.
	APIVersion string `json:"apiVersion,omitempty"`
	// Region is the AWS region of a Bedrock connection: its endpoint and
	// its signing scope.
	Region string `json:"region,omitempty"`
	// Location is the Vertex AI location (us-central1, europe-west4,
	// global).
	Location string `json:"location,omitempty"`
}

// Defaults of the adapters' settings.
const (
	DefaultAzureAPIVersion = "2024-10-21"
	DefaultVertexLocation  = "us-central1"
)

// configKeys are the keys each adapter's config takes, with the JSON type
// of each ("boolean" or "string").
var configKeys = map[string]map[string]string{
	AdapterOpenAI:         {"useResponsesApi": "boolean"},
	AdapterAnthropic:      {},
	AdapterAzure:          {"apiVersion": "string"},
	AdapterBedrock:        {"region": "string"},
	AdapterVertexAI:       {"location": "string"},
	AdapterGoogleAIStudio: {},
}

// Adapters lists the adapters the client speaks.
func Adapters() []string {
	return []string{AdapterOpenAI, AdapterAnthropic, AdapterAzure, AdapterBedrock, AdapterVertexAI, AdapterGoogleAIStudio}
}

// KnownAdapter reports whether the client speaks adapter.
func KnownAdapter(adapter string) bool {
	_, ok := configKeys[adapter]
	return ok
}

// regionPattern matches AWS regions and Google Cloud locations.
var regionPattern = regexp.MustCompile(`^[a-z]{2,}(-[a-z0-9]+)*$`)

// ParseConfig checks an adapter's config object (null or {} when it takes
// none) and returns it; the error names the offending key.
func ParseConfig(adapter string, raw json.RawMessage) (Config, error) {
	keys, ok := configKeys[adapter]
	if !ok {
		return Config{}, fmt.Errorf("unknown adapter %q", adapter)
	}
	var fields map[string]json.RawMessage
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
			return Config{}, errors.New("config must be a JSON object")
		}
	}
	for k, v := range fields {
		want, ok := keys[k]
		if !ok {
			if len(keys) == 0 {
				return Config{}, fmt.Errorf("config: the %s adapter takes no settings, got %q", adapter, k)
			}
			return Config{}, fmt.Errorf("config: unknown key %q for the %s adapter (allowed: %s)", k, adapter, strings.Join(sortedNames(keys), ", "))
		}
		var bad bool
		switch want {
		case "boolean":
			var b bool
			bad = json.Unmarshal(v, &b) != nil
		case "string":
			var s string
			bad = json.Unmarshal(v, &s) != nil || s == ""
		}
		if bad {
			return Config{}, fmt.Errorf("config: %s must be a non-empty %s", k, want)
		}
	}
	var cfg Config
	if fields != nil {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
	}
	switch adapter {
	case AdapterBedrock:
		if cfg.Region == "" {
			return Config{}, errors.New(`config: the bedrock adapter requires {"region": "<aws-region>"}`)
		}
		if !regionPattern.MatchString(cfg.Region) {
			return Config{}, fmt.Errorf("config: region %q is not an AWS region", cfg.Region)
		}
	case AdapterVertexAI:
		if cfg.Location != "" && !regionPattern.MatchString(cfg.Location) {
			return Config{}, fmt.Errorf("config: location %q is not a Google Cloud location", cfg.Location)
		}
	case AdapterAzure:
		if cfg.APIVersion != "" && url.QueryEscape(cfg.APIVersion) != cfg.APIVersion {
			return Config{}, fmt.Errorf("config: apiVersion %q is not an API version", cfg.APIVersion)
		}
	}
	return cfg, nil
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Destination is the part of cfg that decides which host the secret is
// sent to (Bedrock's region, Vertex AI's location), empty when none does.
func Destination(adapter string, cfg Config) string {
	switch adapter {
	case AdapterBedrock:
		return "region=" + cfg.Region
	case AdapterVertexAI:
		return "location=" + cfg.location()
	}
	return ""
}

func (c Config) location() string {
	if c.Location == "" {
		return DefaultVertexLocation
	}
	return c.Location
}

// DefaultBaseURL is where an adapter's calls go when the connection names
// no base URL: a fixed public API, empty where the config decides it
// (Bedrock, Vertex AI) or there is no default (Azure).
func DefaultBaseURL(adapter string) string {
	switch adapter {
	case AdapterOpenAI:
		return "https://api.openai.com/v1"
	case AdapterAnthropic:
		return "https://api.anthropic.com/v1"
	case AdapterGoogleAIStudio:
		return "https://generativelanguage.googleapis.com"
	}
	return ""
}

// baseURL is where ep's calls go: its own base URL, or the one its adapter
// and config imply.
func (ep Endpoint) baseURL() string {
	if ep.BaseURL != "" {
		return strings.TrimRight(ep.BaseURL, "/")
	}
	switch ep.Adapter {
	case AdapterBedrock:
		return "https://bedrock-runtime." + ep.Config.Region + ".amazonaws.com"
	case AdapterVertexAI:
		if loc := ep.Config.location(); loc != "global" {
			return "https://" + loc + "-aiplatform.googleapis.com"
		}
		return "https://aiplatform.googleapis.com"
	}
	return DefaultBaseURL(ep.Adapter)
}

// URLs lists every URL ep's calls go to: the API's base, and for Vertex AI
// the token endpoint of the service account. The host policy checks each.
func (ep Endpoint) URLs() ([]string, error) {
	base := ep.baseURL()
	if base == "" {
		return nil, fmt.Errorf("the %s adapter requires a baseURL", ep.Adapter)
	}
	urls := []string{base}
	if ep.Adapter == AdapterVertexAI {
		sa, err := parseServiceAccount(ep.APIKey)
		if err != nil {
			return nil, err
		}
		urls = append(urls, sa.TokenURI)
	}
	return urls, nil
}

// CheckSecret checks that secret has the form adapter expects: Bedrock's
// AWS keys and Vertex AI's service account are JSON objects.
func CheckSecret(adapter, secret string) error {
	switch adapter {
	case AdapterBedrock:
		_, err := parseAWSKeys(secret)
		return err
	case AdapterVertexAI:
		_, err := parseServiceAccount(secret)
		return err
	}
	return nil
}

// SecretHint is the part of secret that may be shown to identify it: the
// access key id of AWS keys, the key id of a service account, else the
// secret itself (of which only the end is shown).
func SecretHint(adapter, secret string) string {
	switch adapter {
	case AdapterBedrock:
		if keys, err := parseAWSKeys(secret); err == nil {
			return keys.AccessKeyID
		}
	case AdapterVertexAI:
		if sa, err := parseServiceAccount(secret); err == nil {
			return sa.PrivateKeyID
		}
	}
	return secret
}
