// Package apikey holds the one rule for API key pairs: how a secret is hashed,
// how it is compared, and what a verified key grants. The collector's
// authenticator and the API server both verify keys through it.
package apikey

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Scope says what a verified key may reach.
type Scope string

const (
	// ScopeProject keys read and write one project's data.
	ScopeProject Scope = "project"
	// ScopeOrganization keys manage an organization's projects and keys; they
	// are refused on project data routes.
	ScopeOrganization Scope = "organization"
)

// Principal is what a verified key pair grants.
type Principal struct {
	PublicKey      string
	ProjectID      string // empty for organization keys
	OrganizationID string
	Scope          Scope
}

// Verifier checks a key pair. Implementations compare secret hashes in
// constant time and never keep a plaintext secret.
type Verifier interface {
	Verify(ctx context.Context, publicKey, secretKey string) (Principal, error)
}

var (
	// ErrMissingCredentials means no usable Authorization header was sent.
	ErrMissingCredentials = errors.New("no authorization header")
	// ErrInvalidCredentials means the pair is unknown, revoked or wrong.
	ErrInvalidCredentials = errors.New("invalid credentials")
	// ErrMalformedHeader means the Authorization header is not
	// `Basic base64(publicKey:secretKey)`; it is ErrInvalidCredentials too.
	ErrMalformedHeader = fmt.Errorf("%w: expected Basic base64(publicKey:secretKey)", ErrInvalidCredentials)
	// ErrSecretRequired means a public key alone (Bearer) was sent where a
	// key pair is needed: 403, whatever the key.
	ErrSecretRequired = errors.New("this endpoint requires a key pair, not a public key alone")
	// ErrNotProjectKey means a valid key of another scope (an organization
	// key) was used where a project's data is read or written: 403.
	ErrNotProjectKey = errors.New("this endpoint requires a project API key, not an organization key")
)

// RequireProject is the one check that a verified key may act on a
// project's data: it is a project key (ErrNotProjectKey otherwise) and
// names its project (a key that names none is not valid:
// ErrInvalidCredentials). Ingestion, the authenticator and the API all ask
// it, and answer its errors as internal/apierr.Auth says.
func RequireProject(p Principal) error {
	switch {
	case p.Scope != ScopeProject:
		return ErrNotProjectKey
	case p.ProjectID == "":
		return ErrInvalidCredentials
	}
	return nil
}

// HashSecret returns the plain hex SHA-256 of a secret: the form of the
// static keys in the authenticator's configuration, of cache keys, and the
// inner hash of Hasher.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretMatches reports whether secret hashes to storedHash (HashSecret's
// form), in constant time.
func SecretMatches(secret, storedHash string) bool {
	got := HashSecret(secret)
	return subtle.ConstantTimeCompare([]byte(got), []byte(strings.ToLower(storedHash))) == 1
}

// HashKeyEnv names the variable holding the server-side key (pepper) that
// stored secret hashes are keyed with: 32 bytes as 64 hex digits or base64.
// Like the encryption key it lives outside the database, so a copy of the
// database alone does not allow guessing secrets offline.
const HashKeyEnv = "GLASSBOX_HASH_KEY"

// pepperedPrefix marks a hash keyed with the pepper.
const pepperedPrefix = "hmac-sha256:"

// Hasher is the one rule for storing secrets: with a pepper, the stored
// form is HMAC-SHA-256(pepper, SHA-256(secret)); without one, SHA-256
// alone. Keying the plain hash (rather than the secret) lets hashes stored
// before the pepper was set be upgraded without their secrets.
type Hasher struct {
	pepper []byte
}

// NewHasher returns a hasher keyed with pepper; nil means no pepper.
func NewHasher(pepper []byte) Hasher {
	return Hasher{pepper: pepper}
}

// HasherFromEnv reads HashKeyEnv through getenv; unset means no pepper.
func HasherFromEnv(getenv func(string) string) (Hasher, error) {
	raw := strings.TrimSpace(getenv(HashKeyEnv))
	if raw == "" {
		return Hasher{}, nil
	}
	key, err := DecodeKey(HashKeyEnv, raw)
	if err != nil {
		return Hasher{}, err
	}
	return NewHasher(key), nil
}

// DecodeKey reads a 32-byte key given as 64 hex digits or in base64; name
// is the setting it came from, for the error.
func DecodeKey(name, raw string) ([]byte, error) {
	key, err := hex.DecodeString(raw)
	if err != nil || len(key) != 32 {
		key, err = base64.StdEncoding.DecodeString(raw)
	}
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s must hold 32 bytes as 64 hex digits or in base64 (e.g. openssl rand -hex 32)", name)
	}
	return key, nil
}

// Peppered reports whether the hasher has a pepper.
func (h Hasher) Peppered() bool { return len(h.pepper) > 0 }

// Hash returns the stored form of secret.
func (h Hasher) Hash(secret string) string {
	return h.upgrade(HashSecret(secret))
}

func (h Hasher) upgrade(plain string) string {
	if !h.Peppered() {
		return plain
	}
	mac := hmac.New(sha256.New, h.pepper)
	mac.Write([]byte(plain))
	return pepperedPrefix + hex.EncodeToString(mac.Sum(nil))
}

// Upgrade returns the peppered form of a hash stored without one, and
// false when there is nothing to upgrade.
func (h Hasher) Upgrade(stored string) (string, bool) {
	if !h.Peppered() || IsPeppered(stored) {
		return "", false
	}
	return h.upgrade(strings.ToLower(stored)), true
}

// IsPeppered reports whether a stored hash was keyed with a pepper.
func IsPeppered(stored string) bool { return strings.HasPrefix(stored, pepperedPrefix) }

// Matches reports whether secret hashes to stored, in constant time. A hash
// stored without a pepper (by a release before it, until the start-up
// upgrade) still matches; a peppered one never matches without the pepper.
func (h Hasher) Matches(secret, stored string) bool {
	if !IsPeppered(stored) {
		return SecretMatches(secret, stored)
	}
	return subtle.ConstantTimeCompare([]byte(h.Hash(secret)), []byte(stored)) == 1
}

// ParseBasic extracts the key pair from an `Authorization: Basic base64(pk:sk)`
// header value. Both parts must be non-empty. No header is
// ErrMissingCredentials, a public key alone (`Bearer pk`) ErrSecretRequired,
// anything else ErrMalformedHeader.
func ParseBasic(header string) (publicKey, secretKey string, err error) {
	if header == "" {
		return "", "", ErrMissingCredentials
	}
	scheme, encoded, ok := strings.Cut(header, " ")
	if ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(encoded) != "" {
		return "", "", ErrSecretRequired
	}
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", ErrMalformedHeader
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil {
		return "", "", ErrMalformedHeader
	}
	publicKey, secretKey, ok = strings.Cut(string(raw), ":")
	if !ok || publicKey == "" || secretKey == "" {
		return "", "", ErrMalformedHeader
	}
	return publicKey, secretKey, nil
}

// DisplaySecret is the listable form of a secret: its first 6 and last 4 characters.
func DisplaySecret(secret string) string {
	if len(secret) <= 10 {
		return "..."
	}
	return secret[:6] + "..." + secret[len(secret)-4:]
}
