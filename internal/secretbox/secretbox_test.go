package secretbox

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func testBox(t *testing.T) *Box {
	t.Helper()
	box, err := FromEnv(func(string) string { return testKeyHex })
	require.NoError(t, err)
	return box
}

func TestSecretBoxRoundTripAndBinding(t *testing.T) {
	box := testBox(t)
	sealed, err := box.Seal("sk-secret", "row-1")
	require.NoError(t, err)
	assert.NotContains(t, sealed, "sk-secret")
	again, err := box.Seal("sk-secret", "row-1")
	require.NoError(t, err)
	assert.NotEqual(t, sealed, again, "every seal takes a fresh nonce")

	plain, err := box.Open(sealed, "row-1")
	require.NoError(t, err)
	assert.Equal(t, "sk-secret", plain)

	_, err = box.Open(sealed, "row-2")
	assert.ErrorContains(t, err, "does not open", "a sealed value is bound to its row")
	_, err = box.Open("v1:!!", "row-1")
	assert.ErrorContains(t, err, "malformed")

	other, err := New(make([]byte, 32))
	require.NoError(t, err)
	_, err = other.Open(sealed, "row-1")
	assert.ErrorContains(t, err, "was "+EncryptionKeyEnv+" changed")
}

func TestFromEnv(t *testing.T) {
	box, err := FromEnv(func(string) string { return "" })
	require.NoError(t, err)
	assert.Nil(t, box, "no key, no box")
	_, err = box.Seal("x", "a")
	assert.ErrorIs(t, err, ErrNoEncryptionKey)
	_, err = box.Open("v1:AAAA", "a")
	assert.ErrorIs(t, err, ErrNoEncryptionKey)

	b64 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	box, err = FromEnv(func(string) string { return b64 })
	require.NoError(t, err)
	assert.NotNil(t, box)

	for _, bad := range []string{"abcd", strings.Repeat("zz", 32), base64.StdEncoding.EncodeToString([]byte("short"))} {
		_, err := FromEnv(func(string) string { return bad })
		assert.ErrorIs(t, err, ErrInvalidKey, bad)
	}
}
