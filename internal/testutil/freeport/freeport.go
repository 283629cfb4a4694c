// Package freeport hands tests TCP ports for servers they start as separate
// processes or configure by address.
//
// A port from listening on :0 comes from the kernel's ephemeral range, which
// is also where every outgoing connection takes its local port: between the
// test closing its probe listener and the server binding, a connection to
// ClickHouse or ZooKeeper can take it. Ports here come from below that range,
// so only another listener can collide, and this package never hands out the
// same port twice in one process.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	lowest = 20000
	// fallbackEphemeralStart is Linux's default start of the ephemeral range.
	fallbackEphemeralStart = 32768
)

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Port returns a port on 127.0.0.1 that nothing listens on and that no
// outgoing connection will take.
func Port(t testing.TB) int {
	t.Helper()
	highest := ephemeralStart() - 1
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		port := lowest + rand.IntN(highest-lowest+1) //nolint:gosec // spreads test ports, not a secret
		if handed[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		handed[port] = true
		return port
	}
	t.Fatalf("no free port in %d-%d", lowest, highest)
	return 0
}

// Addr returns 127.0.0.1:port for a port from Port.
func Addr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", Port(t))
}

// ephemeralStart reads where the kernel's ephemeral ports begin.
func ephemeralStart() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallbackEphemeralStart
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return fallbackEphemeralStart
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start <= lowest+1000 {
		return fallbackEphemeralStart
	}
	return start
}
