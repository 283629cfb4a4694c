package controlplane

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

// ErrNoEncryptionKey is returned when a secret must be sealed or opened but
// no key is configured.
var ErrNoEncryptionKey = errors.New(EncryptionKeyEnv + " is not set; it is required to store and use LLM connection secrets")

// sealedPrefix versions the sealed format, so that a later key rotation can
// tell old from new.
const sealedPrefix = "v1:"

// SecretBox seals and opens secrets with AES-256-GCM.
type SecretBox struct {
	aead cipher.AEAD
}

// NewSecretBox returns a box for a 32-byte key.
func NewSecretBox(key []byte) (*SecretBox, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("%w: encryption key must be 32 bytes, got %d", ErrInvalid, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &SecretBox{aead: aead}, nil
}

// SecretBoxFromEnv reads EncryptionKeyEnv through getenv. It returns nil
// and no error when the variable is unset: secrets then cannot be stored,
// and everything else works.
func SecretBoxFromEnv(getenv func(string) string) (*SecretBox, error) {
	raw := strings.TrimSpace(getenv(EncryptionKeyEnv))
	if raw == "" {
		return nil, nil
	}
	key, err := apikey.DecodeKey(EncryptionKeyEnv, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return NewSecretBox(key)
}

// Seal encrypts plaintext with a fresh nonce; aad binds the result to its
// row, so a sealed value copied into another row does not open.
func (b *SecretBox) Seal(plaintext, aad string) (string, error) {
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
func (b *SecretBox) Open(sealed, aad string) (string, error) {
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
