// Package secretbox seals secrets at rest (LLM connection keys, automation
// signing secrets and headers) with AES-256-GCM, each bound to its row.
package secretbox // import "github.com/glassbox-dev/glassbox/internal/secretbox"

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

// EncryptionKeyEnv names the variable holding the key that seals secrets at
// rest (LLM connection keys): 32 bytes as 64 hex digits or in base64.
const EncryptionKeyEnv = "GLASSBOX_ENCRYPTION_KEY"

// ErrInvalidKey marks a malformed encryption key.
var ErrInvalidKey = errors.New("invalid encryption key")

// ErrNoEncryptionKey is returned when a secret must be sealed or opened but
// no key is configured.
var ErrNoEncryptionKey = errors.New(EncryptionKeyEnv + " is not set; it is required to store and use LLM connection secrets")

// sealedPrefix versions the sealed format, so that a later key rotation can
// tell old from new.
const sealedPrefix = "v1:"

// Box seals and opens secrets with AES-256-GCM.
type Box struct {
	aead cipher.AEAD
}

// New returns a box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("%w: it must be 32 bytes, got %d", ErrInvalidKey, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// FromEnv reads EncryptionKeyEnv through getenv. It returns nil
// and no error when the variable is unset: secrets then cannot be stored,
// and everything else works.
func FromEnv(getenv func(string) string) (*Box, error) {
	raw := strings.TrimSpace(getenv(EncryptionKeyEnv))
	if raw == "" {
		return nil, nil
	}
	key, err := apikey.DecodeKey(EncryptionKeyEnv, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	return New(key)
}

// Seal encrypts plaintext with a fresh nonce; aad binds the result to its
// row, so a sealed value copied into another row does not open.
func (b *Box) Seal(plaintext, aad string) (string, error) {
	if b == nil {
		return "", ErrNoEncryptionKey
	}
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := b.aead.Seal(nonce, nonce, []byte(plaintext), []byte(aad))
	return sealedPrefix + base64.StdEncoding.EncodeToString(sealed), nil
}

// Open decrypts what Seal produced for the same aad.
func (b *Box) Open(sealed, aad string) (string, error) {
	if b == nil {
		return "", ErrNoEncryptionKey
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, sealedPrefix))
	if err != nil || !strings.HasPrefix(sealed, sealedPrefix) || len(raw) < b.aead.NonceSize() {
		return "", errors.New("sealed secret is malformed")
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(aad))
	if err != nil {
		return "", errors.New("sealed secret does not open with this key; was " + EncryptionKeyEnv + " changed?")
	}
	return string(plain), nil
}
