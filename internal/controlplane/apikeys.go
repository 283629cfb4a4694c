package controlplane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

const (
	publicKeyPrefix = "pk-lf-"
	secretKeyPrefix = "sk-lf-"
	// minSecretEntropyChars keeps caller-chosen secrets long enough that
	// their hashes cannot be guessed, with or without the pepper.
	minSecretEntropyChars = 32
	// touchInterval bounds how often last_used_at is written per key.
	touchInterval = time.Minute
)

// APIKey is the listable form of a key pair: the secret appears only as
// apikey.DisplaySecret.
type APIKey struct {
	ID             string
	PublicKey      string
	DisplaySecret  string
	Note           string
	Scope          apikey.Scope
	OrganizationID string
	ProjectID      string // empty for organization keys
	CreatedAt      time.Time
	LastUsedAt     time.Time // zero when never used
}

// NewAPIKey is the input of CreateAPIKey.
type NewAPIKey struct {
	Note string
	// PublicKey and SecretKey are generated (pk-lf-<uuid>, sk-lf-<uuid>) when
	// both are empty; headless initialisation passes chosen ones.
	PublicKey string
	SecretKey string
}

// CreateAPIKey adds a key pair to a live project of the organization, or to
// the organization itself when projectID is empty. The secret is returned
// here and never again.
func (s *Store) CreateAPIKey(ctx context.Context, orgID, projectID string, k NewAPIKey) (APIKey, string, error) {
	public, secret, err := keyPair(k)
	if err != nil {
		return APIKey{}, "", err
	}
	key := APIKey{
		ID:             uuid.NewString(),
		PublicKey:      public,
		DisplaySecret:  apikey.DisplaySecret(secret),
		Note:           strings.TrimSpace(k.Note),
		Scope:          apikey.ScopeOrganization,
		OrganizationID: orgID,
		ProjectID:      projectID,
		CreatedAt:      fromMicros(s.micros()),
	}
	var project sql.NullString
	if projectID == "" {
		if _, err := s.GetOrganization(ctx, orgID); err != nil {
			return APIKey{}, "", err
		}
	} else {
		// Keys are not issued for deleted projects.
		if _, err := s.GetProject(ctx, orgID, projectID); err != nil {
			return APIKey{}, "", err
		}
		key.Scope = apikey.ScopeProject
		project = sql.NullString{String: projectID, Valid: true}
	}
	if _, err := s.conn().exec(ctx, `INSERT INTO api_keys
		(id, public_key, secret_hash, display_secret, note, scope, org_id, project_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		key.ID, key.PublicKey, s.hasher.Hash(secret), key.DisplaySecret, key.Note, string(key.Scope),
		orgID, project, key.CreatedAt.UnixMicro()); err != nil {
		return APIKey{}, "", fmt.Errorf("create api key: %w", classify(err))
	}
	// A verdict cached for the public key before it existed ends now.
	s.changed(ctx, ChangeAPIKeys)
	return key, secret, nil
}

func keyPair(k NewAPIKey) (public, secret string, err error) {
	if k.PublicKey == "" && k.SecretKey == "" {
		return publicKeyPrefix + uuid.NewString(), secretKeyPrefix + uuid.NewString(), nil
	}
	if !strings.HasPrefix(k.PublicKey, publicKeyPrefix) || !validID(k.PublicKey) {
		return "", "", fmt.Errorf("%w: public key must start with %q and hold only letters, digits, '-', '_' or '.'", ErrInvalid, publicKeyPrefix)
	}
	if !strings.HasPrefix(k.SecretKey, secretKeyPrefix) || len(k.SecretKey)-len(secretKeyPrefix) < minSecretEntropyChars ||
		strings.ContainsAny(k.SecretKey, ": \t\r\n") {
		return "", "", fmt.Errorf("%w: secret key must start with %q, have at least %d more characters, and no ':' or whitespace",
			ErrInvalid, secretKeyPrefix, minSecretEntropyChars)
	}
	return k.PublicKey, k.SecretKey, nil
}

// ListAPIKeys returns the unrevoked keys of a project of the organization,
// or the organization's own keys when projectID is empty, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context, orgID, projectID string) ([]APIKey, error) {
	rows, err := s.conn().query(ctx, `SELECT id, public_key, display_secret, note, scope, org_id, project_id, created_at, last_used_at
		FROM api_keys
		WHERE org_id = ? AND COALESCE(project_id, '') = ? AND revoked_at IS NULL
		ORDER BY created_at, id`, orgID, projectID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	defer rows.Close()
	var out []APIKey
	for rows.Next() {
		var (
			k         APIKey
			scope     string
			project   sql.NullString
			createdAt int64
			lastUsed  sql.NullInt64
		)
		if err := rows.Scan(&k.ID, &k.PublicKey, &k.DisplaySecret, &k.Note, &scope, &k.OrganizationID, &project,
			&createdAt, &lastUsed); err != nil {
			return nil, fmt.Errorf("list api keys: %w", err)
		}
		k.Scope, k.ProjectID = apikey.Scope(scope), project.String
		k.CreatedAt, k.LastUsedAt = fromMicros(createdAt), fromNullMicros(lastUsed)
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeAPIKey revokes a key of a project of the organization, or of the
// organization itself when projectID is empty. The row stays for audit; the
// key no longer verifies or lists.
func (s *Store) RevokeAPIKey(ctx context.Context, orgID, projectID, keyID string) error {
	res, err := s.conn().exec(ctx, `UPDATE api_keys SET revoked_at = ?
		WHERE id = ? AND org_id = ? AND COALESCE(project_id, '') = ? AND revoked_at IS NULL`,
		s.micros(), keyID, orgID, projectID)
	if err != nil {
		return fmt.Errorf("revoke api key %q: %w", keyID, err)
	}
	return s.changedIf(ctx, requireOne(res, "api key "+keyID), ChangeAPIKeys)
}

// Verify implements apikey.Verifier. Any mismatch, unknown key or revoked key
// yields apikey.ErrInvalidCredentials without detail; database failures are
// returned as they are so callers can answer 503 rather than 401.
func (s *Store) Verify(ctx context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	var (
		id, hash, scope, org string
		project              sql.NullString
		lastUsed, revoked    sql.NullInt64
	)
	err := s.conn().queryRow(ctx, `SELECT id, secret_hash, scope, org_id, project_id, last_used_at, revoked_at
		FROM api_keys WHERE public_key = ?`, publicKey).
		Scan(&id, &hash, &scope, &org, &project, &lastUsed, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		s.hasher.Matches(secretKey, s.dummyHash) // both failures cost the same
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	if err != nil {
		return apikey.Principal{}, fmt.Errorf("verify api key: %w", err)
	}
	if !s.hasher.Matches(secretKey, hash) || revoked.Valid {
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	s.touch(ctx, id, publicKey, lastUsed)
	return apikey.Principal{
		PublicKey:      publicKey,
		ProjectID:      project.String,
		OrganizationID: org,
		Scope:          apikey.Scope(scope),
	}, nil
}

// touch records use of a key at most once per touchInterval: it skips when
// the stored value is recent, when this process wrote it recently, and the
// conditional UPDATE keeps replicas from rewriting it within the interval.
// Failures are ignored; last_used_at is informational.
func (s *Store) touch(ctx context.Context, id, publicKey string, lastUsed sql.NullInt64) {
	now := s.now()
	if lastUsed.Valid && now.Sub(fromMicros(lastUsed.Int64)) < touchInterval {
		return
	}
	s.touchMu.Lock()
	if now.Sub(s.touched[publicKey]) < touchInterval {
		s.touchMu.Unlock()
		return
	}
	s.touched[publicKey] = now
	s.touchMu.Unlock()
	_, _ = s.conn().exec(ctx, `UPDATE api_keys SET last_used_at = ?
		WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
		now.UnixMicro(), id, now.Add(-touchInterval).UnixMicro())
}

// pepperSecretHashes keys the secret hashes stored without a pepper once
// one is configured, and refuses to go on without the pepper that hashes
// were keyed with: no key would verify.
func (s *Store) pepperSecretHashes(ctx context.Context) error {
	return s.inTx(ctx, func(c conn) error {
		rows, err := c.query(ctx, `SELECT id, secret_hash FROM api_keys`)
		if err != nil {
			return fmt.Errorf("read api key hashes: %w", err)
		}
		type upgrade struct{ id, from, to string }
		var upgrades []upgrade
		peppered := 0
		for rows.Next() {
			var id, hash string
			if err := rows.Scan(&id, &hash); err != nil {
				return errors.Join(fmt.Errorf("read api key hashes: %w", err), rows.Close())
			}
			if apikey.IsPeppered(hash) {
				peppered++
			} else if keyed, ok := s.hasher.Upgrade(hash); ok {
				upgrades = append(upgrades, upgrade{id, hash, keyed})
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("read api key hashes: %w", err)
		}
		if peppered > 0 && !s.hasher.Peppered() {
			return fmt.Errorf("%w: %d api key hashes are keyed with %s, which is not set; set it as before", ErrInvalid, peppered, apikey.HashKeyEnv)
		}
		for _, u := range upgrades {
			if _, err := c.exec(ctx, `UPDATE api_keys SET secret_hash = ? WHERE id = ? AND secret_hash = ?`, u.to, u.id, u.from); err != nil {
				return fmt.Errorf("key the hash of api key %s: %w", u.id, err)
			}
		}
		return nil
	})
}
