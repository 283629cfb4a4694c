package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// LLM connection adapters: the wire protocol spoken to the provider.
const (
	// AdapterOpenAI is the OpenAI chat completions API and every server
	// compatible with it (vLLM, Ollama, LiteLLM, Azure's v1 endpoint, ...),
	// or OpenAI's Responses API.
	AdapterOpenAI = llm.AdapterOpenAI
	// AdapterAnthropic is Anthropic's native messages API.
	AdapterAnthropic = llm.AdapterAnthropic
	// AdapterAzure is Azure OpenAI's deployments API.
	AdapterAzure = llm.AdapterAzure
	// AdapterBedrock is the AWS Bedrock Converse API.
	AdapterBedrock = llm.AdapterBedrock
	// AdapterVertexAI is Gemini on Google Cloud's Vertex AI.
	AdapterVertexAI = llm.AdapterVertexAI
	// AdapterGoogleAIStudio is the Gemini API of Google AI Studio.
	AdapterGoogleAIStudio = llm.AdapterGoogleAIStudio
)

// Defaults of a new connection.
const (
	DefaultLLMConcurrency = 4
	DefaultLLMTimeout     = 60 * time.Second
	maxLLMConcurrency     = 256
	maxLLMTimeout         = 10 * time.Minute
)

// LLMConnection is a provider account of a project, as it may be shown: the
// secret key only in its display form, the extra headers only by name.
type LLMConnection struct {
	ID        string
	ProjectID string
	// Provider is the connection's name, unique within the project.
	Provider string
	Adapter  string
	// BaseURL is empty where the config decides the host (Bedrock's
	// region, Vertex AI's location).
	BaseURL       string
	DisplaySecret string
	HeaderKeys    []string
	CustomModels  []string
	// WithDefaultModels offers the adapter's well-known models besides
	// the custom ones.
	WithDefaultModels bool
	// Config is the adapter's settings (llm.Config), a JSON object.
	Config       json.RawMessage
	DefaultModel string
	// DefaultParams are model parameters sent with every call (temperature,
	// max_tokens, ...): a JSON object.
	DefaultParams json.RawMessage
	// MaxConcurrency bounds the calls in flight per API server process.
	MaxConcurrency int
	Timeout        time.Duration
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// LLMCredentials is a connection with its secrets opened, for the workers
// that call the provider.
type LLMCredentials struct {
	LLMConnection
	SecretKey    string
	ExtraHeaders map[string]string
}

// Endpoint is where and as whom the connection calls.
func (c LLMCredentials) Endpoint() llm.Endpoint {
	// The stored config was checked when saved.
	cfg, _ := llm.ParseConfig(c.Adapter, c.Config)
	return llm.Endpoint{Adapter: c.Adapter, BaseURL: c.BaseURL, APIKey: c.SecretKey, Headers: c.ExtraHeaders, Config: cfg}
}

// LLMConnectionUpsert creates the connection named Provider or changes it.
// Zero values keep what is stored (or take the defaults on create); the
// secret key is required on create.
type LLMConnectionUpsert struct {
	Provider      string
	Adapter       string
	SecretKey     string
	BaseURL       string
	ExtraHeaders  map[string]string
	CustomModels  []string
	DefaultModel  *string
	DefaultParams json.RawMessage
	// Config replaces the adapter's settings; nil keeps them, or resets
	// them when the adapter changes.
	Config            json.RawMessage
	WithDefaultModels *bool
	// MaxConcurrency and Timeout keep the stored value when zero.
	MaxConcurrency int
	Timeout        time.Duration
	// CheckURL, when set, must allow every URL a newly sealed secret will
	// be sent to: the API's, and Vertex AI's token endpoint.
	CheckURL func(rawURL string) error
}

const llmConnectionColumns = `id, project_id, provider, adapter, base_url, display_secret, header_keys, custom_models,
	with_default_models, config, default_model, default_params, max_concurrency, timeout_ms, created_at, updated_at`

// UpsertLLMConnection creates or updates a connection; box seals the secret
// key and the extra headers.
func (s *Store) UpsertLLMConnection(ctx context.Context, box *secretbox.Box, projectID string, u LLMConnectionUpsert) (LLMConnection, error) {
	name, err := checkName("llm connection provider", u.Provider)
	if err != nil {
		return LLMConnection{}, err
	}
	if box == nil {
		return LLMConnection{}, secretbox.ErrNoEncryptionKey
	}
	var out LLMConnection
	err = s.inTx(ctx, func(c conn) error {
		cur, sealedKey, sealedHeaders, err := getLLMConnection(ctx, c, `project_id = ? AND provider = ?`, projectID, name)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if !exists {
			if u.SecretKey == "" {
				return fmt.Errorf("%w: secretKey is required for a new connection", ErrInvalid)
			}
			cur = LLMConnection{ID: uuid.NewString(), ProjectID: projectID, Provider: name, Adapter: AdapterOpenAI,
				DefaultParams: json.RawMessage(`{}`), MaxConcurrency: DefaultLLMConcurrency, Timeout: DefaultLLMTimeout,
				CustomModels: []string{}, HeaderKeys: []string{}, WithDefaultModels: true, Config: json.RawMessage(`{}`)}
		}
		stored := secretsDestination(cur)
		if err := applyLLMUpsert(&cur, u); err != nil {
			return err
		}
		// A stored secret is never sent somewhere new: a change of
		// destination takes the secrets again, and they are sealed for it.
		if exists && secretsDestination(cur) != stored {
			if u.SecretKey == "" {
				return fmt.Errorf("%w: secretKey is required when adapter, baseURL or the config's region or location change; the stored key is only sent where it was saved for", ErrInvalid)
			}
			if u.ExtraHeaders == nil && len(cur.HeaderKeys) > 0 {
				return fmt.Errorf("%w: extraHeaders are required when adapter, baseURL or the config's region or location change; the stored headers are only sent where they were saved for", ErrInvalid)
			}
		}
		if exists && u.ExtraHeaders != nil && u.SecretKey == "" {
			return fmt.Errorf("%w: secretKey is required when extraHeaders change", ErrInvalid)
		}
		if u.SecretKey != "" {
			if err := checkLLMSecret(cur, u); err != nil {
				return err
			}
			if sealedKey, err = box.Seal(u.SecretKey, secretsDestination(cur)); err != nil {
				return err
			}
			cur.DisplaySecret = displaySecret(llm.SecretHint(cur.Adapter, u.SecretKey))
		}
		if u.ExtraHeaders != nil || !exists || secretsDestination(cur) != stored {
			headers, _ := json.Marshal(nonNilMap(u.ExtraHeaders))
			if sealedHeaders, err = box.Seal(string(headers), secretsDestination(cur)); err != nil {
				return err
			}
			cur.HeaderKeys = sortedKeys(u.ExtraHeaders)
		}
		headerKeys, _ := json.Marshal(cur.HeaderKeys)
		models, _ := json.Marshal(cur.CustomModels)
		now := s.micros()
		if exists {
			_, err = c.exec(ctx, `UPDATE llm_connections SET adapter = ?, base_url = ?, secret_key = ?, display_secret = ?,
				extra_headers = ?, header_keys = ?, custom_models = ?, with_default_models = ?, config = ?, default_model = ?,
				default_params = ?, max_concurrency = ?, timeout_ms = ?, updated_at = ? WHERE project_id = ? AND id = ?`,
				cur.Adapter, cur.BaseURL, sealedKey, cur.DisplaySecret, sealedHeaders, string(headerKeys), string(models),
				boolInt(cur.WithDefaultModels), string(cur.Config), cur.DefaultModel, string(cur.DefaultParams), cur.MaxConcurrency,
				cur.Timeout.Milliseconds(), now, projectID, cur.ID)
		} else {
			_, err = c.exec(ctx, `INSERT INTO llm_connections (id, project_id, provider, adapter, base_url, secret_key,
				display_secret, extra_headers, header_keys, custom_models, with_default_models, config, default_model,
				default_params, max_concurrency, timeout_ms, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				cur.ID, projectID, name, cur.Adapter, cur.BaseURL, sealedKey, cur.DisplaySecret, sealedHeaders,
				string(headerKeys), string(models), boolInt(cur.WithDefaultModels), string(cur.Config), cur.DefaultModel,
				string(cur.DefaultParams), cur.MaxConcurrency, cur.Timeout.Milliseconds(), now, now)
		}
		if err != nil {
			return fmt.Errorf("upsert llm connection %q: %w", name, classify(err))
		}
		out, _, _, err = getLLMConnection(ctx, c, `project_id = ? AND id = ?`, projectID, cur.ID)
		return err
	})
	return out, err
}

// secretsDestination is the associated data a connection's secrets are
// sealed with: the row, and where the secrets go, including the config
// settings that choose the host (Bedrock's region, Vertex AI's location).
// A secret whose row was pointed elsewhere in the database does not open.
func secretsDestination(cn LLMConnection) string {
	dest := cn.ID + "\n" + cn.Adapter + "\n" + cn.BaseURL
	cfg, err := llm.ParseConfig(cn.Adapter, cn.Config)
	if err != nil {
		// A config edited in the database to something unreadable binds to
		// nothing a secret was sealed for.
		return dest + "\ninvalid config"
	}
	if d := llm.Destination(cn.Adapter, cfg); d != "" {
		dest += "\n" + d
	}
	return dest
}

// checkLLMSecret checks a new secret's form for the adapter and, with the
// upsert's policy, every URL it will be sent to.
func checkLLMSecret(cur LLMConnection, u LLMConnectionUpsert) error {
	if err := llm.CheckSecret(cur.Adapter, u.SecretKey); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	cfg, _ := llm.ParseConfig(cur.Adapter, cur.Config) // checked by applyLLMUpsert
	urls, err := llm.Endpoint{Adapter: cur.Adapter, BaseURL: cur.BaseURL, APIKey: u.SecretKey, Config: cfg}.URLs()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if u.CheckURL == nil {
		return nil
	}
	for _, raw := range urls {
		if err := u.CheckURL(raw); err != nil {
			return fmt.Errorf("%w: the %s connection would call %s: %w", ErrInvalid, cur.Adapter, raw, err)
		}
	}
	return nil
}

func applyLLMUpsert(cur *LLMConnection, u LLMConnectionUpsert) error {
	if u.Adapter != "" && u.Adapter != cur.Adapter {
		if !llm.KnownAdapter(u.Adapter) {
			return fmt.Errorf("%w: adapter %q must be one of %s", ErrInvalid, u.Adapter, strings.Join(llm.Adapters(), ", "))
		}
		// The old adapter's public API and settings do not carry over.
		if cur.BaseURL == llm.DefaultBaseURL(cur.Adapter) {
			cur.BaseURL = ""
		}
		cur.Adapter, cur.Config = u.Adapter, json.RawMessage(`{}`)
	}
	if u.Config != nil {
		cur.Config = u.Config
	}
	cfg, err := llm.ParseConfig(cur.Adapter, cur.Config)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// Stored as the adapter reads it: known keys only, canonical JSON.
	cur.Config, _ = json.Marshal(cfg)
	if u.BaseURL != "" {
		parsed, err := url.Parse(u.BaseURL)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			return fmt.Errorf("%w: baseURL %q must be an absolute http(s) URL", ErrInvalid, u.BaseURL)
		}
		cur.BaseURL = strings.TrimRight(u.BaseURL, "/")
	}
	if cur.BaseURL == "" {
		cur.BaseURL = llm.DefaultBaseURL(cur.Adapter)
	}
	if cur.BaseURL == "" && cur.Adapter == AdapterAzure {
		return fmt.Errorf("%w: the azure adapter requires a baseURL (https://<resource>.openai.azure.com)", ErrInvalid)
	}
	if u.WithDefaultModels != nil {
		cur.WithDefaultModels = *u.WithDefaultModels
	}
	for k := range u.ExtraHeaders {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return fmt.Errorf("%w: extraHeaders: %q is not a header name", ErrInvalid, k)
		}
	}
	if u.CustomModels != nil {
		cur.CustomModels = slices.DeleteFunc(slices.Clone(u.CustomModels), func(m string) bool { return strings.TrimSpace(m) == "" })
	}
	if u.DefaultModel != nil {
		cur.DefaultModel = strings.TrimSpace(*u.DefaultModel)
	}
	if u.DefaultParams != nil {
		if !isJSONObject(u.DefaultParams) {
			return fmt.Errorf("%w: defaultParams must be a JSON object", ErrInvalid)
		}
		cur.DefaultParams = u.DefaultParams
	}
	if u.MaxConcurrency != 0 {
		if u.MaxConcurrency < 1 || u.MaxConcurrency > maxLLMConcurrency {
			return fmt.Errorf("%w: maxConcurrency must be 1 to %d", ErrInvalid, maxLLMConcurrency)
		}
		cur.MaxConcurrency = u.MaxConcurrency
	}
	if u.Timeout != 0 {
		if u.Timeout < time.Second || u.Timeout > maxLLMTimeout {
			return fmt.Errorf("%w: timeout must be from 1s to %s", ErrInvalid, maxLLMTimeout)
		}
		cur.Timeout = u.Timeout
	}
	return nil
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// displaySecret shows the last four characters of a key, as Langfuse does.
func displaySecret(secret string) string {
	if len(secret) <= 8 {
		return "..."
	}
	return "..." + secret[len(secret)-4:]
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func getLLMConnection(ctx context.Context, c conn, where string, args ...any) (LLMConnection, string, string, error) {
	var sealedKey, sealedHeaders string
	cn, err := scanLLMConnection(c.queryRow(ctx, `SELECT `+llmConnectionColumns+`, secret_key, extra_headers
		FROM llm_connections WHERE `+where, args...), &sealedKey, &sealedHeaders)
	if errors.Is(err, sql.ErrNoRows) {
		return LLMConnection{}, "", "", fmt.Errorf("llm connection %v: %w", args[len(args)-1], ErrNotFound)
	}
	if err != nil {
		return LLMConnection{}, "", "", fmt.Errorf("get llm connection: %w", err)
	}
	return cn, sealedKey, sealedHeaders, nil
}

func scanLLMConnection(r scanner, extra ...any) (LLMConnection, error) {
	var (
		cn                                LLMConnection
		headerKeys, models, param, config string
		withDefaults                      int
		timeoutMS                         int64
		createdAt, updatedAt              int64
	)
	dest := append([]any{&cn.ID, &cn.ProjectID, &cn.Provider, &cn.Adapter, &cn.BaseURL, &cn.DisplaySecret, &headerKeys, &models,
		&withDefaults, &config, &cn.DefaultModel, &param, &cn.MaxConcurrency, &timeoutMS, &createdAt, &updatedAt}, extra...)
	if err := r.Scan(dest...); err != nil {
		return LLMConnection{}, err
	}
	if err := errors.Join(json.Unmarshal([]byte(headerKeys), &cn.HeaderKeys), json.Unmarshal([]byte(models), &cn.CustomModels)); err != nil {
		return LLMConnection{}, fmt.Errorf("llm connection %q: %w", cn.ID, err)
	}
	cn.DefaultParams, cn.Config, cn.WithDefaultModels = json.RawMessage(param), json.RawMessage(config), withDefaults != 0
	cn.Timeout = time.Duration(timeoutMS) * time.Millisecond
	cn.CreatedAt, cn.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return cn, nil
}

// GetLLMConnection returns a connection of the project without its secrets.
func (s *Store) GetLLMConnection(ctx context.Context, projectID, id string) (LLMConnection, error) {
	cn, _, _, err := getLLMConnection(ctx, s.conn(), `project_id = ? AND id = ?`, projectID, id)
	return cn, err
}

// GetLLMConnectionByProvider returns the project's connection named provider.
func (s *Store) GetLLMConnectionByProvider(ctx context.Context, projectID, provider string) (LLMConnection, error) {
	cn, _, _, err := getLLMConnection(ctx, s.conn(), `project_id = ? AND provider = ?`, projectID, provider)
	return cn, err
}

// LLMCredentials returns a connection with its secrets opened by box.
func (s *Store) LLMCredentials(ctx context.Context, box *secretbox.Box, projectID, id string) (LLMCredentials, error) {
	cn, sealedKey, sealedHeaders, err := getLLMConnection(ctx, s.conn(), `project_id = ? AND id = ?`, projectID, id)
	if err != nil {
		return LLMCredentials{}, err
	}
	key, err := box.Open(sealedKey, secretsDestination(cn))
	if err != nil {
		return LLMCredentials{}, fmt.Errorf("secret key of llm connection %q: %w", cn.Provider, err)
	}
	headers, err := box.Open(sealedHeaders, secretsDestination(cn))
	if err != nil {
		return LLMCredentials{}, fmt.Errorf("extra headers of llm connection %q: %w", cn.Provider, err)
	}
	creds := LLMCredentials{LLMConnection: cn, SecretKey: key}
	if err := json.Unmarshal([]byte(headers), &creds.ExtraHeaders); err != nil {
		return LLMCredentials{}, fmt.Errorf("extra headers of llm connection %q: %w", cn.Provider, err)
	}
	return creds, nil
}

// ResealLLMSecrets binds secrets sealed by earlier releases, which used the
// row id alone as associated data, to their connection's destination. It is
// idempotent and runs at start, before any worker opens a secret.
func (s *Store) ResealLLMSecrets(ctx context.Context, box *secretbox.Box) (resealed int, err error) {
	if box == nil {
		return 0, nil
	}
	err = s.inTx(ctx, func(c conn) error {
		rows, err := c.query(ctx, `SELECT `+llmConnectionColumns+`, secret_key, extra_headers FROM llm_connections`)
		if err != nil {
			return fmt.Errorf("list llm connections: %w", err)
		}
		type legacy struct {
			cn                       LLMConnection
			key, headers             string
			sealedKey, sealedHeaders string
		}
		var stale []legacy
		for rows.Next() {
			var l legacy
			if l.cn, err = scanLLMConnection(rows, &l.sealedKey, &l.sealedHeaders); err != nil {
				return errors.Join(err, rows.Close())
			}
			if _, err := box.Open(l.sealedKey, secretsDestination(l.cn)); err == nil {
				continue
			}
			var errKey, errHeaders error
			l.key, errKey = box.Open(l.sealedKey, l.cn.ID)
			l.headers, errHeaders = box.Open(l.sealedHeaders, l.cn.ID)
			if errKey != nil || errHeaders != nil {
				// Sealed with another key: left alone, reported when used.
				continue
			}
			stale = append(stale, l)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("list llm connections: %w", err)
		}
		for _, l := range stale {
			key, err := box.Seal(l.key, secretsDestination(l.cn))
			if err != nil {
				return err
			}
			headers, err := box.Seal(l.headers, secretsDestination(l.cn))
			if err != nil {
				return err
			}
			if _, err := c.exec(ctx, `UPDATE llm_connections SET secret_key = ?, extra_headers = ? WHERE id = ? AND secret_key = ?`,
				key, headers, l.cn.ID, l.sealedKey); err != nil {
				return fmt.Errorf("reseal llm connection %q: %w", l.cn.ID, err)
			}
		}
		resealed = len(stale)
		return nil
	})
	return resealed, err
}

// ListLLMConnections returns one page of the project's connections by
// provider name, and their number.
func (s *Store) ListLLMConnections(ctx context.Context, projectID string, offset, limit int) ([]LLMConnection, int, error) {
	return projectPage(ctx, s.conn(), "llm connections", "llm_connections", llmConnectionColumns, "provider, id", projectID, offset, limit, func(r scanner) (LLMConnection, error) { return scanLLMConnection(r) })
}

// DeleteLLMConnection deletes a connection that no rule or experiment uses.
func (s *Store) DeleteLLMConnection(ctx context.Context, projectID, id string) error {
	return s.inTx(ctx, func(c conn) error {
		if err := refuseInUse(ctx, c, "llm connection "+id, []string{
			`SELECT name FROM eval_rules WHERE project_id = ? AND connection_id = ?`,
			`SELECT run_name FROM eval_experiments WHERE project_id = ? AND connection_id = ?`,
		}, projectID, id); err != nil {
			return err
		}
		res, err := c.exec(ctx, `DELETE FROM llm_connections WHERE project_id = ? AND id = ?`, projectID, id)
		if err != nil {
			return fmt.Errorf("delete llm connection %q: %w", id, err)
		}
		return requireOne(res, "llm connection "+id)
	})
}

// refuseInUse returns ErrConflict naming the first user any of queries
// finds; each query takes args and selects a name.
func refuseInUse(ctx context.Context, c conn, what string, queries []string, args ...any) error {
	for _, q := range queries {
		var name string
		err := c.queryRow(ctx, q+` LIMIT 1`, args...).Scan(&name)
		switch {
		case err == nil:
			return fmt.Errorf("%w: %s is used by %q", ErrConflict, what, name)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("check uses of %s: %w", what, err)
		}
	}
	return nil
}
