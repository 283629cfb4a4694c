package chstore_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// withParams appends query parameters to a DSN.
func withParams(dsn, params string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// The observations insert takes the DSN's compression and settings, and
// reuses its connection for the next insert.
func TestObservationInsertOptions(t *testing.T) {
	ctx := context.Background()
	for _, compress := range []string{"none", "lz4", "zstd"} {
		t.Run(compress, func(t *testing.T) {
			cfg := chtest.Config(t)
			cfg.DSN = withParams(cfg.DSN, "compress="+compress+"&max_insert_block_size=100000&insert_deduplicate=0")
			s := chtest.StoreOn(t, cfg)
			for i, trace := range []string{"a0a0000000000000000000000000000a", "b0b0000000000000000000000000000b"} {
				require.NoError(t, s.InsertObservations(ctx, traceOf("p", trace, base+int64(i)*second)))
				got, err := s.GetTrace(ctx, "p", trace)
				require.NoError(t, err)
				assert.Len(t, got.Observations, 3)
				assert.Equal(t, "chat", got.Name)
			}
		})
	}
}

// A setting the server does not know fails the insert with its exception,
// and a text setting, which the insert cannot send, fails the store's start.
func TestObservationInsertUnknownSetting(t *testing.T) {
	cfg := chtest.Config(t)
	s := chtest.StoreOn(t, cfg)
	cfg.DSN = withParams(cfg.DSN, "no_such_setting=1")
	bad, err := chstore.Open(context.Background(), cfg)
	require.NoError(t, err)
	defer bad.Close()
	err = bad.InsertObservations(context.Background(), traceOf("p", "c0c0000000000000000000000000000c", base))
	require.ErrorContains(t, err, "no_such_setting")
	assert.NotErrorIs(t, err, chstore.ErrUnavailable)
	_, err = s.GetTrace(context.Background(), "p", "c0c0000000000000000000000000000c")
	require.ErrorIs(t, err, chstore.ErrNotFound)

	cfg.DSN = withParams(cfg.DSN, "load_balancing=random")
	require.ErrorContains(t, cfg.Validate(), "load_balancing=random: only numeric settings")
}

// The insert goes to the next of the DSN's servers when one is down.
func TestObservationInsertFailsOver(t *testing.T) {
	cfg := chtest.Config(t)
	cfg.DSN = strings.Replace(cfg.DSN, "clickhouse://", "clickhouse://127.0.0.1:1,", 1)
	s := chtest.StoreOn(t, cfg)
	require.NoError(t, s.InsertObservations(context.Background(), traceOf("p", "d0d0000000000000000000000000000d", base)))
}

// An insert abandoned part-way, by its context or by Close before Send,
// commits nothing of what it had not sent, and the next insert works.
func TestObservationInsertAbandoned(t *testing.T) {
	s := chtest.Store(t)
	ctx, cancel := context.WithCancel(context.Background())
	ins, err := s.BeginObservationInsert(ctx)
	require.NoError(t, err)
	cancel()
	time.Sleep(100 * time.Millisecond) // the cancellation reaches the connection from a goroutine of its own
	err = ins.Add([][]byte{chstore.AppendObservationRecord(nil, traceOf("p", "e0e0000000000000000000000000000e", base))})
	if err == nil {
		_, err = ins.Send()
	}
	require.ErrorIs(t, err, chstore.ErrUnavailable, "a cancelled insert is worth a retry")
	ins.Close()

	ins, err = s.BeginObservationInsert(context.Background())
	require.NoError(t, err)
	ins.Close()

	deadline, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	require.NoError(t, s.InsertObservations(deadline, traceOf("p", "f0f0000000000000000000000000000f", base)))
	got, err := s.GetTrace(deadline, "p", "f0f0000000000000000000000000000f")
	require.NoError(t, err)
	assert.Len(t, got.Observations, 3)
	_, err = s.GetTrace(deadline, "p", "e0e0000000000000000000000000000e")
	require.ErrorIs(t, err, chstore.ErrNotFound)
}

// privateClickHouse starts a ClickHouse of the test's own in dir, with env
// added to scripts/clickhouse.sh's, and returns its native port and a
// function that runs the script's commands on it.
func privateClickHouse(t *testing.T, dir string, env ...string) (int, func(command string)) {
	t.Helper()
	chtest.DSN(t) // runs where ClickHouse tests run
	script, err := filepath.Abs("../../scripts/clickhouse.sh")
	require.NoError(t, err)
	tcp, httpPort := freeport.Port(t), freeport.Port(t)
	ctl := func(command string) {
		t.Helper()
		args := []string{command, dir}
		if command == "start" {
			args = append(args, fmt.Sprint(tcp), fmt.Sprint(httpPort))
		}
		cmd := exec.Command(script, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "clickhouse.sh %s: %s", command, out)
	}
	ctl("start")
	t.Cleanup(func() { _ = exec.Command(script, "stop", dir).Run() })
	return tcp, ctl
}

// The insert, like the driver, talks TLS to a server's secure port.
func TestObservationInsertOverTLS(t *testing.T) {
	dir := t.TempDir()
	writeSelfSignedCert(t, filepath.Join(dir, "tls"))
	secure := freeport.Port(t)
	privateClickHouse(t, dir, fmt.Sprintf("CLICKHOUSE_TLS_PORT=%d", secure))

	cfg := chstore.Config{DSN: fmt.Sprintf("clickhouse://127.0.0.1:%d?secure=true&skip_verify=true", secure), Database: "tls", QueryTimeout: 10 * time.Second}
	s := chtest.StoreOn(t, cfg)
	ctx := context.Background()
	require.NoError(t, s.InsertObservations(ctx, traceOf("p", "a1a1000000000000000000000000000a", base)))
	got, err := s.GetTrace(ctx, "p", "a1a1000000000000000000000000000a")
	require.NoError(t, err)
	assert.Len(t, got.Observations, 3)
}

// A connection kept from an earlier insert that the server has since closed
// (here by restarting) costs the next insert nothing: it opens a new one.
func TestObservationInsertAfterServerRestart(t *testing.T) {
	tcp, ctl := privateClickHouse(t, t.TempDir())
	cfg := chstore.Config{DSN: fmt.Sprintf("clickhouse://127.0.0.1:%d", tcp), Database: "restart", QueryTimeout: 10 * time.Second}
	s := chtest.StoreOn(t, cfg)
	ctx := context.Background()
	require.NoError(t, s.InsertObservations(ctx, traceOf("p", "a2a2000000000000000000000000000a", base)))
	ctl("stop")
	ctl("start")
	require.NoError(t, s.InsertObservations(ctx, traceOf("p", "b2b2000000000000000000000000000b", base)))
	got, err := s.GetTrace(ctx, "p", "b2b2000000000000000000000000000b")
	require.NoError(t, err)
	assert.Len(t, got.Observations, 3)
}

func writeSelfSignedCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
}
