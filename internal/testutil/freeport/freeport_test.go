package freeport

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPortsAreBindableDistinctAndBelowTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		port := Port(t)
		assert.False(t, seen[port], "port %d handed out twice", port)
		seen[port] = true
		assert.GreaterOrEqual(t, port, lowest)
		assert.Less(t, port, ephemeralStart())
	}
	l, err := net.Listen("tcp", Addr(t))
	require.NoError(t, err, "an address from Addr can be bound")
	require.NoError(t, l.Close())
}
