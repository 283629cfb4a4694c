// Package apikey holds the one rule for API key pairs: how a secret is hashed,
// how it is compared, and what a verified key grants. The collector's
// authenticator and the API server both verify keys through it.
package apikey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
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
)

// HashSecret returns the stored form of a secret key: hex SHA-256. Secret keys
// are random 128-bit values, so a fast unsalted hash is not open to guessing.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretMatches reports whether secret hashes to storedHash, in constant time.
func SecretMatches(secret, storedHash string) bool {
	got := HashSecret(secret)
	return subtle.ConstantTimeCompare([]byte(got), []byte(strings.ToLower(storedHash))) == 1
}

// ParseBasic extracts the key pair from an `Authorization: Basic base64(pk:sk)`
// header value. Both parts must be non-empty.
func ParseBasic(header string) (publicKey, secretKey string, err error) {
	if header == "" {
		return "", "", ErrMissingCredentials
	}
	scheme, encoded, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", ErrInvalidCredentials
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil {
		return "", "", ErrInvalidCredentials
	}
	publicKey, secretKey, ok = strings.Cut(string(raw), ":")
	if !ok || publicKey == "" || secretKey == "" {
		return "", "", ErrInvalidCredentials
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
