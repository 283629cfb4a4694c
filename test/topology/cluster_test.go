package topology

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

const (
	clusterName = "glassbox"
	database    = "glassbox"
	orgID       = "topo"
	projectID   = "topo-proj"
	publicKey   = "pk-lf-topology-0000000000000000"
	secretKey   = "sk-lf-topology-0123456789abcdef0123456789abcdef"
	orgPublic   = "pk-lf-topology-org-000000000000"
	orgSecret   = "sk-lf-topology-org-0123456789abcdef0123456789abcdef"
)

// chNode is one ClickHouse server: shard 1 or 2, replica a or b.
type chNode struct {
	*proc
	shard      int
	tcp, httpP int
}

func (n *chNode) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.tcp) }

// topology is the whole deployment, every piece on 127.0.0.1.
type topology struct {
	dir, repo      string
	zk             *proc
	ch             []*chNode // shard 1: ch[0], ch[1]; shard 2: ch[2], ch[3]
	writers        []*proc
	gateways       []*proc
	apis           []*proc
	apiURLs        []string
	gatewayAddrs   []string
	nginx          *proc
	baseURL        string
	tlsConfig      *tls.Config
	startupSeconds float64
}

func (tp *topology) all() []*proc {
	out := []*proc{tp.nginx}
	out = append(out, tp.gateways...)
	out = append(out, tp.writers...)
	out = append(out, tp.apis...)
	for _, n := range tp.ch {
		out = append(out, n.proc)
	}
	return append(out, tp.zk)
}

func (tp *topology) newProc(name, path string, args, env []string, ready func() error) *proc {
	return &proc{name: name, path: path, args: args, env: env, ready: ready,
		log: filepath.Join(tp.dir, "logs", name+".log"), pids: filepath.Join(tp.dir, "pids")}
}

// startTopology starts every piece in dependency order and stops them all
// when the test ends.
func startTopology(t *testing.T) *topology {
	t.Helper()
	if os.Getenv("GLASSBOX_TOPOLOGY") != "1" {
		t.Skip("GLASSBOX_TOPOLOGY=1 is not set; scripts/topology.sh runs this test")
	}
	tp := &topology{dir: need(t, "GLASSBOX_TOPOLOGY_DIR"), repo: repoRoot(t)}
	bin, apiBin, pgDSN := need(t, "GLASSBOX_BIN"), need(t, "GLASSBOX_API_BIN"), need(t, "GLASSBOX_TOPOLOGY_POSTGRES_DSN")
	java := program(t, "java")
	chServer := program(t, "clickhouse-server", "/usr/sbin/clickhouse-server")
	nginxBin := program(t, "nginx", "/usr/sbin/nginx")
	zkJar := "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(zkJar); err != nil {
		missing(t, zkJar+" is missing (Debian package zookeeper); scripts/topology.sh installs it")
	}
	for _, d := range []string{"logs", "pids", "tls"} {
		require.NoError(t, os.MkdirAll(filepath.Join(tp.dir, d), 0o755))
	}
	t.Cleanup(func() {
		// In parallel, ZooKeeper last: a ClickHouse server stops faster
		// while it can still reach it.
		var procs []*proc
		for _, p := range tp.all() {
			if p != nil && p != tp.zk {
				procs = append(procs, p)
			}
		}
		parallel(t, len(procs), func(i int) { procs[i].signal(t, syscall.SIGTERM, 20*time.Second) })
		if tp.zk != nil {
			tp.zk.signal(t, syscall.SIGTERM, 20*time.Second)
		}
		if t.Failed() {
			t.Logf("logs are in %s/logs", tp.dir)
		}
	})
	begin := time.Now()

	// ZooKeeper first: a ClickHouse server with Replicated tables exits when
	// it cannot reach it at start.
	zkPort := freeport.Port(t)
	zkDir := filepath.Join(tp.dir, "zk")
	require.NoError(t, os.MkdirAll(filepath.Join(zkDir, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(zkDir, "zoo.cfg"), fmt.Appendf(nil,
		"tickTime=2000\ndataDir=%s/data\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n"+
			"admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,mntr,stat\n", zkDir, zkPort), 0o600))
	tp.zk = tp.newProc("zookeeper", java, []string{"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC",
		"-cp", zkJar + ":/usr/share/java/slf4j-simple.jar", "org.apache.zookeeper.server.ZooKeeperServerMain",
		filepath.Join(zkDir, "zoo.cfg")}, nil, zkServing(fmt.Sprintf("127.0.0.1:%d", zkPort)))
	tp.zk.start(t)

	// ClickHouse: 2 shards x 2 replicas, started in parallel.
	for i := range 4 {
		n := &chNode{shard: i/2 + 1, tcp: freeport.Port(t), httpP: freeport.Port(t)}
		tp.ch = append(tp.ch, n)
	}
	for i, n := range tp.ch {
		dir := filepath.Join(tp.dir, fmt.Sprintf("ch%d", i+1))
		writeClickHouseConfig(t, dir, tp.ch, i, zkPort, freeport.Port(t))
		n.proc = tp.newProc(fmt.Sprintf("ch%d", i+1), chServer, []string{"--config-file=" + filepath.Join(dir, "config.xml")},
			nil, httpOK(fmt.Sprintf("http://127.0.0.1:%d/ping", n.httpP)))
	}
	parallel(t, len(tp.ch), func(i int) { tp.ch[i].start(t) })

	// Certificates: the writers' server certificate and the gateways' client
	// certificate (mutual TLS between the tiers), and nginx's.
	writerCA, gatewayCA, edgeCA := newCA(t, tp.dir, "writers"), newCA(t, tp.dir, "gateways"), newCA(t, tp.dir, "edge")
	writerCert, writerKey := writerCA.issue(t, "writer", true)
	gatewayCert, gatewayKey := gatewayCA.issue(t, "gateway", false)
	edgeCert, edgeKey := edgeCA.issue(t, "edge", true)
	roots := x509.NewCertPool()
	roots.AddCert(edgeCA.cert)
	tp.tlsConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}

	hashKey, encKey := randomHex(32), randomHex(32)
	common := []string{
		"GLASSBOX_CONTROL_PLANE_DSN=" + pgDSN, "GLASSBOX_HASH_KEY=" + hashKey, "GLASSBOX_ENCRYPTION_KEY=" + encKey,
		"GLASSBOX_CLICKHOUSE_CLUSTER=" + clusterName, "GLASSBOX_CLICKHOUSE_REPLICATED=true",
		"GLASSBOX_CLICKHOUSE_DATABASE=" + database,
	}
	// Each client lists every node, its own first, so that it goes on when
	// one stops. Inserts end once the shards have the rows: asynchronous,
	// the receiving node queues them for the other shard, and while a
	// replica is down that queue drains slowly (18.16 tries the down replica
	// first), which left a 60 s outage taking 95 s to catch up.
	dsn := func(first int) string {
		var addrs []string
		for i := range tp.ch {
			addrs = append(addrs, tp.ch[(first+i)%len(tp.ch)].addr())
		}
		return "clickhouse://" + strings.Join(addrs, ",") + "?insert_distributed_sync=1"
	}

	// The first API server creates the organization, project and key, and the
	// ClickHouse tables; the rest start after it.
	nginxPort := freeport.Port(t)
	tp.baseURL = fmt.Sprintf("https://127.0.0.1:%d", nginxPort)
	for i := range 2 {
		listen := fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
		tp.apiURLs = append(tp.apiURLs, "http://"+listen)
		env := append(append([]string{}, common...),
			"GLASSBOX_API_LISTEN="+listen, "GLASSBOX_PUBLIC_URL="+tp.baseURL,
			"GLASSBOX_CLICKHOUSE_DSN="+dsn(i*2), "GLASSBOX_DATA_DIR="+filepath.Join(tp.dir, fmt.Sprintf("api%d", i+1)),
			"GLASSBOX_INIT_ORG_ID="+orgID, "GLASSBOX_INIT_ORG_NAME=Topology", "GLASSBOX_INIT_PROJECT_ID="+projectID,
			"GLASSBOX_INIT_PROJECT_NAME=Topology", "GLASSBOX_INIT_PUBLIC_KEY="+publicKey, "GLASSBOX_INIT_SECRET_KEY="+secretKey)
		tp.apis = append(tp.apis, tp.newProc(fmt.Sprintf("api%d", i+1), apiBin,
			[]string{"--config", filepath.Join(tp.repo, "configs/api-server.yaml")}, env,
			httpOK("http://"+listen+"/api/public/health")))
	}
	tp.apis[0].start(t)
	admin := exec.Command(apiBin, "admin", "create-org-key", "--org", orgID, "--public-key", orgPublic, "--note", "topology")
	admin.Env = append(append(os.Environ(), common...), "GLASSBOX_ADMIN_SECRET_KEY="+orgSecret)
	out, err := admin.CombinedOutput()
	require.NoError(t, err, "%s", out)

	// Writers, then the gateways that route to them by trace id.
	var writerAddrs []string
	for i := range 2 {
		listen := fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
		health := fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
		writerAddrs = append(writerAddrs, listen)
		env := append(append([]string{}, common...),
			"GLASSBOX_WRITER_LISTEN="+listen, "GLASSBOX_HEALTH_LISTEN="+health, fmt.Sprintf("GLASSBOX_METRICS_PORT=%d", freeport.Port(t)),
			"GLASSBOX_WRITER_TLS_CERT="+writerCert, "GLASSBOX_WRITER_TLS_KEY="+writerKey,
			"GLASSBOX_WRITER_TLS_CLIENT_CA="+gatewayCA.file(),
			"GLASSBOX_CLICKHOUSE_DSN="+dsn(i*2+1), "GLASSBOX_DATA_DIR="+filepath.Join(tp.dir, fmt.Sprintf("writer%d", i+1)))
		tp.writers = append(tp.writers, tp.newProc(fmt.Sprintf("writer%d", i+1), bin,
			[]string{"--config", filepath.Join(tp.repo, "configs/gateway-writer.yaml")}, env, httpOK("http://"+health+"/")))
	}
	var gatewayAddrs []string
	for i := range 2 {
		listen := fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
		health := fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
		gatewayAddrs = append(gatewayAddrs, listen)
		env := append(append([]string{}, common...),
			"GLASSBOX_LISTEN="+listen, "GLASSBOX_HEALTH_LISTEN="+health, fmt.Sprintf("GLASSBOX_METRICS_PORT=%d", freeport.Port(t)),
			"GLASSBOX_WRITERS=["+strings.Join(writerAddrs, ", ")+"]", "GLASSBOX_WRITER_TLS_CA="+writerCA.file(),
			"GLASSBOX_GATEWAY_TLS_CERT="+gatewayCert, "GLASSBOX_GATEWAY_TLS_KEY="+gatewayKey)
		tp.gateways = append(tp.gateways, tp.newProc(fmt.Sprintf("gateway%d", i+1), bin,
			[]string{"--config", filepath.Join(tp.repo, "configs/gateway.yaml")}, env, httpOK("http://"+health+"/")))
	}
	tp.gatewayAddrs = gatewayAddrs
	starters := append(append([]*proc{tp.apis[1]}, tp.writers...), tp.gateways...)
	parallel(t, len(starters), func(i int) { starters[i].start(t) })

	// nginx with the shipped routing file, only its addresses and
	// certificate paths changed.
	tp.nginx = tp.newProc("nginx", nginxBin, nil, nil, func() error {
		resp, err := tp.client().Get(tp.baseURL + "/api/public/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	tp.nginx.args = writeNginxConfig(t, tp.dir, tp.repo, nginxPort, gatewayAddrs, tp.apiURLs, edgeCert, edgeKey)
	tp.nginx.start(t)
	tp.startupSeconds = time.Since(begin).Seconds()
	return tp
}

func (tp *topology) client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tp.tlsConfig.Clone()}}
}

// parallel runs f(0..n-1) at once and waits for all.
func parallel(t *testing.T, n int, f func(i int)) {
	t.Helper()
	done := make(chan struct{}, n)
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			f(i)
		}()
	}
	for range n {
		<-done
	}
	if t.Failed() { // a Fatal in a goroutine ends only that goroutine
		t.FailNow()
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeClickHouseConfig writes node i's config: the cluster (2 shards x 2
// replicas, internal replication), its macros, ZooKeeper and distributed DDL.
func writeClickHouseConfig(t *testing.T, dir string, nodes []*chNode, i, zkPort, interserver int) {
	t.Helper()
	for _, d := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	var shards strings.Builder
	for s := 0; s < len(nodes); s += 2 {
		fmt.Fprintf(&shards, "<shard><internal_replication>true</internal_replication>"+
			"<replica><host>127.0.0.1</host><port>%d</port></replica><replica><host>127.0.0.1</host><port>%d</port></replica></shard>",
			nodes[s].tcp, nodes[s+1].tcp)
	}
	n := nodes[i]
	config := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>%[1]s/log/server.log</log><errorlog>%[1]s/log/error.log</errorlog><size>20M</size><count>2</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>%[2]d</tcp_port>
  <http_port>%[3]d</http_port>
  <interserver_http_port>%[4]d</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <path>%[1]s/data/</path>
  <tmp_path>%[1]s/tmp/</tmp_path>
  <user_files_path>%[1]s/user_files/</user_files_path>
  <format_schema_path>%[1]s/format_schemas/</format_schema_path>
  <users_config>%[1]s/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>67108864</mark_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <max_table_size_to_drop>0</max_table_size_to_drop>
  <max_partition_size_to_drop>0</max_partition_size_to_drop>
  <!-- Parts merged away are deleted after 10 s instead of 8 minutes: a run
       makes thousands of small parts, and removing their files at the end
       otherwise takes minutes. -->
  <merge_tree><old_parts_lifetime>10</old_parts_lifetime></merge_tree>
  <macros><shard>%02[5]d</shard><replica>ch%[6]d</replica></macros>
  <zookeeper>
    <node index="1"><host>127.0.0.1</host><port>%[7]d</port></node>
    <session_timeout_ms>30000</session_timeout_ms>
    <operation_timeout_ms>10000</operation_timeout_ms>
  </zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <remote_servers><%[8]s>%[9]s</%[8]s></remote_servers>
</yandex>
`, dir, n.tcp, n.httpP, interserver, n.shard, i+1, zkPort, clusterName, shards.String())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.xml"), []byte(config), 0o600))
	// poll_interval=1: a server other nodes hold connections to stops in
	// about 2 s instead of up to 11 s.
	users := `<?xml version="1.0"?>
<yandex>
  <profiles><default>
    <allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type>
    <max_memory_usage>2000000000</max_memory_usage>
    <poll_interval>1</poll_interval>
  </default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.xml"), []byte(users), 0o600))
}

// writeNginxConfig renders configs/split-routing.nginx.conf with this run's
// addresses and certificate, inside a minimal main configuration, and
// returns nginx's arguments.
func writeNginxConfig(t *testing.T, dir, repo string, port int, gateways, apiURLs []string, cert, key string) []string {
	t.Helper()
	shipped, err := os.ReadFile(filepath.Join(repo, "configs/split-routing.nginx.conf"))
	require.NoError(t, err)
	servers := func(addrs []string) string {
		var b strings.Builder
		for _, a := range addrs {
			fmt.Fprintf(&b, "server %s; ", strings.TrimPrefix(a, "http://"))
		}
		return strings.TrimSpace(b.String())
	}
	routing := string(shipped)
	for _, r := range [][2]string{
		{"server 10.0.1.10:3000; server 10.0.1.11:3000;", servers(gateways)},
		{"server 10.0.2.10:3100; server 10.0.2.11:3100;", servers(apiURLs)},
		{"listen 443 ssl;", fmt.Sprintf("listen 127.0.0.1:%d ssl;", port)},
		{"/etc/glassbox/tls/server.pem", cert},
		{"/etc/glassbox/tls/server-key.pem", key},
	} {
		require.Contains(t, routing, r[0], "configs/split-routing.nginx.conf changed; update the topology test")
		routing = strings.Replace(routing, r[0], r[1], 1)
	}
	ndir := filepath.Join(dir, "nginx")
	require.NoError(t, os.MkdirAll(ndir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ndir, "split-routing.conf"), []byte(routing), 0o600))
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // workers read this run's directory
	}
	main := fmt.Sprintf(`%sworker_processes 1;
error_log %[2]s/error.log warn;
pid %[2]s/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[2]s/body;
  proxy_temp_path %[2]s/proxy;
  fastcgi_temp_path %[2]s/fastcgi;
  uwsgi_temp_path %[2]s/uwsgi;
  scgi_temp_path %[2]s/scgi;
  include %[2]s/split-routing.conf;
}
`, user, ndir)
	require.NoError(t, os.WriteFile(filepath.Join(ndir, "nginx.conf"), []byte(main), 0o600))
	return []string{"-p", ndir, "-c", filepath.Join(ndir, "nginx.conf"), "-g", "daemon off;"}
}

// ca issues certificates for 127.0.0.1 servers and for clients.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
	name string
}

func newCA(t *testing.T, dir, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	c := &ca{cert: cert, key: key, dir: filepath.Join(dir, "tls"), name: name}
	writePEM(t, c.file(), "CERTIFICATE", der)
	return c
}

func (c *ca) file() string { return filepath.Join(c.dir, c.name+"-ca.pem") }

func (c *ca) issue(t *testing.T, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(c.dir, name+".pem"), filepath.Join(c.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}
