// Package password hashes and checks the passwords people sign in with.
// It holds no state and takes no database: the control plane stores what
// Hash returns.
package password // import "github.com/glassbox-dev/glassbox/internal/password"

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Password hashing is argon2id with OWASP's baseline parameters (19 MiB,
// two passes, one lane): about 30 ms per check here, which bounds what a
// stolen database is worth while a login stays quick. Hashes are stored in
// the PHC string format, so parameters can be raised later and old hashes
// still verify (and are upgraded at the next sign-in).
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// MinLength is the shortest password accepted; MaxLength bounds the work
// one sign-in attempt can ask for.
const (
	MinLength = 8
	MaxLength = 1024
)

var b64 = base64.RawStdEncoding

// Check refuses a password too short or too long to be set.
func Check(password string) error {
	switch {
	case len(password) < MinLength:
		return fmt.Errorf("password must have at least %d characters", MinLength)
	case len(password) > MaxLength:
		return fmt.Errorf("password must have at most %d characters", MaxLength)
	}
	return nil
}

// Hash returns the PHC string of password under today's parameters; a
// password Check refuses is an error.
func Hash(password string) (string, error) {
	if err := Check(password); err != nil {
		return "", err
	}
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Matches checks password against a stored hash in constant time. current
// is false when the hash should be replaced by one with today's parameters.
func Matches(hash, password string) (ok, current bool) {
	if len(password) > MaxLength {
		return false, true
	}
	if strings.HasPrefix(hash, "$2") {
		// Hashes written before argon2id was adopted.
		return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil, false
	}
	var (
		version          int
		memory, passes   uint32
		threads          uint8
		saltText, keyTxt string
	)
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, true
	}
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, true
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &passes, &threads); err != nil ||
		memory == 0 || memory > 1<<20 || passes == 0 || passes > 16 || threads == 0 {
		return false, true
	}
	saltText, keyTxt = parts[4], parts[5]
	salt, err1 := b64.DecodeString(saltText)
	key, err2 := b64.DecodeString(keyTxt)
	if err1 != nil || err2 != nil || len(key) == 0 {
		return false, true
	}
	got := argon2.IDKey([]byte(password), salt, passes, memory, threads, uint32(len(key))) //nolint:gosec // a stored key is 32 bytes; a longer one fails the comparison
	ok = subtle.ConstantTimeCompare(got, key) == 1
	current = memory == argonMemoryKiB && passes == argonTime && threads == argonThreads && len(key) == argonKeyLen
	return ok, current
}

// Dummy is a hash to compare against when a user has no password, so that
// the answer takes as long as for a real one.
var Dummy = func() string {
	h, err := Hash("no user has this password")
	if err != nil {
		panic(err)
	}
	return h
}()
