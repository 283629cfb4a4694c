package password

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPasswordHashFormat(t *testing.T) {
	h, err := Hash("correct horse battery")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$"), h)
	ok, current := Matches(h, "correct horse battery")
	assert.True(t, ok)
	assert.True(t, current)
	ok, _ = Matches(h, "correct horse batterY")
	assert.False(t, ok)

	weaker := strings.Replace(h, "t=2", "t=1", 1)
	ok, current = Matches(weaker, "correct horse battery")
	assert.False(t, ok, "parameters are part of the hash")
	assert.False(t, current)

	for _, bad := range []string{"", "$argon2id$v=19$m=0,t=2,p=1$AA$AA", "$argon2id$v=18$m=19456,t=2,p=1$AA$AA",
		"$argon2id$v=19$m=99999999,t=2,p=1$AA$AA", "$argon2i$v=19$m=19456,t=2,p=1$AA$AA", "plain"} {
		ok, _ := Matches(bad, "x")
		assert.False(t, ok, bad)
	}
	_, err = Hash(strings.Repeat("x", MaxLength+1))
	assert.EqualError(t, err, "password must have at most 1024 characters")
	_, err = Hash("short")
	assert.EqualError(t, err, "password must have at least 8 characters")
}
