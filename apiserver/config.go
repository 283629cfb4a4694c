package apiserver // import "github.com/glassbox-dev/glassbox/apiserver"

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/media"
	"github.com/glassbox-dev/glassbox/apiserver/ui"
	"github.com/glassbox-dev/glassbox/apiserver/workers"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

// Config configures the standalone API server (YAML file): the server's
// Options plus the two stores it opens. The glassbox_api extension takes
// the same Options and names its stores by id instead.
type Config struct {
	Options `mapstructure:",squash"`

	// ControlPlane is the control plane store.
	ControlPlane ControlPlaneConfig `mapstructure:"control_plane"`
	// ClickHouse is the ClickHouse store (the glassbox_storage extension's
	// keys) and the server's maintenance of it.
	ClickHouse ClickHouseConfig `mapstructure:"clickhouse"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Options configure the server over its stores, standalone and embedded
// alike.
type Options struct {
	// Listen is the host:port the server listens on. The standalone server
	// requires it; in the collector it is optional, since the ingest receiver
	// already hands every path it does not own to the extension.
	Listen string `mapstructure:"listen"`

	// PublicURL is the base URL users reach Glassbox at; its path prefix (if
	// any) starts the htmlPath of traces. Empty means served at the root.
	PublicURL string `mapstructure:"public_url"`

	// InitFromEnv creates the organization, project and key pair named by the
	// GLASSBOX_INIT_* variables at start (idempotent).
	InitFromEnv bool `mapstructure:"init_from_env"`

	// MaxRequestBodyBytes bounds request bodies; larger ones get 413.
	MaxRequestBodyBytes int64 `mapstructure:"max_request_body_bytes"`
	// MaxLargeRequestBodyBytes bounds the bodies of ingestion batches and
	// dataset items, which carry whole model inputs and outputs; they never
	// get less than MaxRequestBodyBytes.
	MaxLargeRequestBodyBytes int64 `mapstructure:"max_large_request_body_bytes"`

	// Media configures the attachments uploaded through the media routes.
	Media MediaConfig `mapstructure:"media"`

	// Workers are the settings of the background jobs (evaluation,
	// automations and alerts), which the standalone server runs beside the
	// API (package workers). The API itself reads only the egress policy,
	// evaluation.webhook_allowed_hosts and evaluation.llm_allowed_hosts: it
	// refuses URLs the workers would not call. In the collector the jobs are
	// the glassbox_workers extension's.
	workers.Config `mapstructure:",squash"`

	// UI configures the web UI served beside the API: sign-in, sign-up and
	// single sign-on.
	UI ui.Config `mapstructure:"ui"`

	// AdminAPIKey turns on the instance admin API (/api/admin/...), which
	// takes it as a bearer token; AdminAPIKeyEnv sets it when this is empty.
	// Without either the admin routes answer 404.
	AdminAPIKey configopaque.String `mapstructure:"admin_api_key"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// ControlPlaneConfig says where organizations, projects and keys live.
type ControlPlaneConfig struct {
	// DSN is sqlite://path (embedded, the default) or postgres://... .
	DSN string `mapstructure:"dsn"`
	// PromptComposition bounds the resolution of prompts that reference
	// other prompts; prompts beyond it are refused at creation and at read.
	PromptComposition PromptCompositionConfig `mapstructure:"prompt_composition"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// PromptCompositionConfig bounds prompt composition.
// (max_resolved_bytes, max_references), as glassbox_controlplane's.
type PromptCompositionConfig = promptcompose.Limits

// MediaConfig says where uploaded media are kept. Uploads go to signed URLs
// on this server, so every API server replica needs the same directory.
type MediaConfig struct {
	// Dir holds the bytes, one file per project and media id.
	Dir string `mapstructure:"dir"`
	// MaxContentLength bounds one upload, in bytes.
	MaxContentLength int64 `mapstructure:"max_content_length"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// ClickHouseConfig says where the trace data lives, with the keys of
// chstore.Settings (the glassbox_storage extension's), and how often the
// server maintains it.
type ClickHouseConfig struct {
	// Settings: dsn, database, cluster, replicated_engines, dial_timeout,
	// query_timeout, metrics_max_rows_to_read.
	chstore.Settings `mapstructure:",squash"`
	// Maintenance: purge, retention and rollups.
	Maintenance `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Maintenance says how often the server maintains the ClickHouse data; its
// keys sit in the clickhouse section, standalone and embedded alike.
type Maintenance struct {
	// PurgeInterval is how often the rows of deleted traces and scores are
	// removed: one ALTER ... DELETE per table for everything deleted since.
	PurgeInterval time.Duration `mapstructure:"purge_interval"`
	// RetentionInterval is how often the rows of projects with a retention
	// (retentionDays) older than it are deleted: one ALTER ... DELETE per
	// table for all such projects, and none when nothing has expired.
	RetentionInterval time.Duration `mapstructure:"retention_interval"`
	// RollupInterval is how often the daily metrics rollups of closed days
	// are brought up to date; until then a changed day is read raw.
	RollupInterval time.Duration `mapstructure:"rollup_interval"`
	// DefaultRetentionDays is the instance-wide retention of the projects
	// whose project and organization set none; 0 keeps their data.
	DefaultRetentionDays int `mapstructure:"default_retention_days"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Defaults of a Config.
const (
	DefaultListen          = "127.0.0.1:3000"
	DefaultControlPlaneDSN = "sqlite://.data/glassbox.db"
	DefaultMediaDir        = ".data/media"
	DefaultPurgeInterval   = 5 * time.Minute
	// DefaultRetentionInterval keeps expired data at most an hour beyond
	// its retention.
	DefaultRetentionInterval = time.Hour
	// DefaultRollupInterval is how long after midnight (UTC), or after late
	// spans or deletions, a day may be read raw rather than rolled up.
	DefaultRollupInterval = 5 * time.Minute
)

// NewDefaultConfig returns the configuration of a local single-node install.
func NewDefaultConfig() Config {
	return Config{
		Options: NewDefaultOptions(),
		ControlPlane: ControlPlaneConfig{DSN: DefaultControlPlaneDSN, PromptComposition: PromptCompositionConfig{
			MaxResolvedBytes: promptcompose.DefaultMaxResolvedBytes,
			MaxReferences:    promptcompose.DefaultMaxReferences,
		}},
		ClickHouse: ClickHouseConfig{Settings: chstore.NewDefaultSettings(), Maintenance: NewDefaultMaintenance()},
	}
}

// NewDefaultMaintenance returns the default maintenance intervals.
func NewDefaultMaintenance() Maintenance {
	return Maintenance{PurgeInterval: DefaultPurgeInterval, RetentionInterval: DefaultRetentionInterval, RollupInterval: DefaultRollupInterval}
}

// NewDefaultOptions returns the server options of a local single-node install.
func NewDefaultOptions() Options {
	return Options{
		Listen:                   DefaultListen,
		MaxRequestBodyBytes:      httpx.DefaultMaxBodyBytes,
		MaxLargeRequestBodyBytes: httpx.DefaultMaxLargeBodyBytes,
		Media:                    MediaConfig{Dir: DefaultMediaDir, MaxContentLength: media.DefaultMaxContentLength},
		Config:                   workers.NewDefaultConfig(),
		UI:                       ui.NewDefaultConfig(),
	}
}

// AdminAPIKeyEnv names the variable the admin API key may come from, as in
// Langfuse.
const AdminAPIKeyEnv = "ADMIN_API_KEY" //nolint:gosec // a variable name, not a secret

// minAdminAPIKeyLen keeps the key that manages every organization from
// being guessable.
const minAdminAPIKeyLen = 16

// adminAPIKey is the configured admin API key, else AdminAPIKeyEnv's; empty
// turns the admin API off.
func (cfg *Options) adminAPIKey(getenv func(string) string) string {
	if k := strings.TrimSpace(string(cfg.AdminAPIKey)); k != "" {
		return k
	}
	return strings.TrimSpace(getenv(AdminAPIKeyEnv))
}

// Validate reports every problem with the configuration.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.ControlPlane.DSN == "" {
		errs = append(errs, errors.New("control_plane.dsn is required"))
	}
	if err := cfg.ControlPlane.PromptComposition.Check(); err != nil {
		errs = append(errs, fmt.Errorf("control_plane.prompt_composition: %w", err))
	}
	if err := cfg.ClickHouse.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("clickhouse: %w", err))
	}
	errs = append(errs, cfg.ClickHouse.Check(), cfg.Check())
	return errors.Join(errs...)
}

// Check reports every problem with the maintenance intervals. (Not named
// Validate: the collector validates embedded structs on their own.)
func (m Maintenance) Check() error {
	var errs []error
	if m.PurgeInterval <= 0 {
		errs = append(errs, errors.New("clickhouse.purge_interval must be positive"))
	}
	if m.RetentionInterval <= 0 {
		errs = append(errs, errors.New("clickhouse.retention_interval must be positive"))
	}
	if m.RollupInterval <= 0 {
		errs = append(errs, errors.New("clickhouse.rollup_interval must be positive"))
	}
	if err := controlplane.CheckRetention(m.DefaultRetentionDays); err != nil {
		errs = append(errs, fmt.Errorf("clickhouse.default_retention_days: %w", err))
	}
	return errors.Join(errs...)
}

// Check reports every problem with the server options.
func (cfg *Options) Check() error {
	var errs []error
	if cfg.Listen != "" {
		if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
			errs = append(errs, fmt.Errorf("listen: %w", err))
		}
	}
	errs = append(errs, workers.CheckPublicURL(cfg.PublicURL))
	if cfg.MaxRequestBodyBytes <= 0 {
		errs = append(errs, errors.New("max_request_body_bytes must be positive"))
	}
	if cfg.MaxLargeRequestBodyBytes <= 0 {
		errs = append(errs, errors.New("max_large_request_body_bytes must be positive"))
	}
	if cfg.Media.Dir == "" {
		errs = append(errs, errors.New("media.dir is required"))
	}
	if cfg.Media.MaxContentLength <= 0 {
		errs = append(errs, errors.New("media.max_content_length must be positive"))
	}
	if k := cfg.adminAPIKey(os.Getenv); k != "" && len(k) < minAdminAPIKeyLen {
		errs = append(errs, fmt.Errorf("admin_api_key (or %s) must have at least %d characters", AdminAPIKeyEnv, minAdminAPIKeyLen))
	}
	errs = append(errs, cfg.Config.Check())
	errs = append(errs, cfg.UI.Validate(cfg.PublicURL))
	return errors.Join(errs...)
}

// htmlPathPrefix is the path of PublicURL without a trailing slash.
func (cfg *Options) htmlPathPrefix() string {
	u, err := url.Parse(cfg.PublicURL)
	if err != nil {
		return ""
	}
	p := u.EscapedPath()
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return p
}
