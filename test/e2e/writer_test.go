package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// testCA issues certificates for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca := &testCA{cert: cert, key: key, dir: t.TempDir()}
	writePEM(t, filepath.Join(ca.dir, "ca.pem"), "CERTIFICATE", der)
	return ca
}

func (ca *testCA) file() string { return filepath.Join(ca.dir, "ca.pem") }

// issue writes a certificate for name (a server on 127.0.0.1, or a client)
// and its key, and returns their paths.
func (ca *testCA) issue(t *testing.T, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// The writer tier trusts the project in the data, so the shipped config only
// lets in clients with a certificate from the tier's CA: plaintext, TLS
// without a client certificate and a certificate of another CA are refused;
// the first tier's certificate gets its spans stored.
// writerTier is a running configs/gateway-writer.yaml with its certificates.
type writerTier struct {
	*collector
	listen                string
	writerCA, gatewayCA   *testCA
	serverCert, serverKey string
}

// startWriter runs the writer tier on ch and waits until its health
// extension answers.
func startWriter(t *testing.T, ch chstore.Config) *writerTier {
	t.Helper()
	bin := requireEnv(t, "GLASSBOX_BIN")
	w := &writerTier{writerCA: newTestCA(t, "writers"), gatewayCA: newTestCA(t, "gateways")}
	w.serverCert, w.serverKey = w.writerCA.issue(t, "writer", true)
	dataDir := t.TempDir()
	health := fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
	w.listen = fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
	c := startProcess(t, bin, "configs/gateway-writer.yaml", "http://"+health,
		"GLASSBOX_WRITER_LISTEN="+w.listen, "GLASSBOX_HEALTH_LISTEN="+health,
		"GLASSBOX_WRITER_TLS_CERT="+w.serverCert, "GLASSBOX_WRITER_TLS_KEY="+w.serverKey,
		"GLASSBOX_WRITER_TLS_CLIENT_CA="+w.gatewayCA.file(),
		"GLASSBOX_CLICKHOUSE_DSN="+ch.DSN, "GLASSBOX_CLICKHOUSE_DATABASE="+ch.Database,
		"GLASSBOX_CLICKHOUSE_CLUSTER=", "GLASSBOX_CLICKHOUSE_REPLICATED=false",
		"GLASSBOX_CONTROL_PLANE_DSN=sqlite://"+filepath.Join(dataDir, "cp.db"), "GLASSBOX_DATA_DIR="+dataDir,
	)
	c.waitServing(t, http.MethodGet, "/", "", http.StatusOK)
	w.collector = c
	return w
}

// client is TLS to the writer, presenting certFile as client certificate
// unless it is empty.
func (w *writerTier) client(t *testing.T, certFile, keyFile string) credentials.TransportCredentials {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(w.writerCA.cert)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		require.NoError(t, err)
		cfg.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(cfg)
}

// gateway is what the first tier presents.
func (w *writerTier) gateway(t *testing.T) credentials.TransportCredentials {
	t.Helper()
	cert, key := w.gatewayCA.issue(t, "gateway", false)
	return w.client(t, cert, key)
}

// export sends one span of project proj-w, stamped as the first tier does.
func (w *writerTier) export(t *testing.T, creds credentials.TransportCredentials, traceID pcommon.TraceID) error {
	t.Helper()
	conn, err := grpc.NewClient(w.listen, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	defer conn.Close()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, "proj-w")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(traceID)
	s.SetSpanID(pcommon.SpanID{1})
	s.SetName("routed")
	now := time.Now()
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	return err
}

func TestWriterTierTakesOnlyTheFirstTier(t *testing.T) {
	ch := chtest.Config(t)
	store := chtest.StoreOn(t, ch)
	w := startWriter(t, ch)
	rogueCert, rogueKey := newTestCA(t, "rogue").issue(t, "rogue", false)

	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext":             insecure.NewCredentials(),
		"no client certificate": w.client(t, "", ""),
		"another CA's client":   w.client(t, rogueCert, rogueKey),
		"the writers' own cert": w.client(t, w.serverCert, w.serverKey), // not a client certificate of the first tier's CA
	} {
		assert.Error(t, w.export(t, creds, pcommon.TraceID{0xee, 1}), name)
	}
	accepted := pcommon.TraceID{0xaa, 7}
	require.NoError(t, w.export(t, w.gateway(t), accepted))
	tr := waitTrace(t, store, "proj-w", accepted.String(), 1)
	assert.Equal(t, "routed", tr.Observations[0].Name)
	_, err := store.GetTrace(context.Background(), "proj-w", pcommon.TraceID{0xee, 1}.String())
	assert.Error(t, err, "nothing refused was stored")
}
