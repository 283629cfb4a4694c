package clickhouseexporter

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap/zaptest"

	"github.com/glassbox-dev/glassbox/extension/storageextension"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/diskqueue"
	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

func openStore(t *testing.T, cfg chstore.Config) *chstore.Store {
	t.Helper()
	s, err := chstore.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// storedIDs lists the project's observation ids as reads return them.
func storedIDs(t *testing.T, s *chstore.Store, project string) []string {
	t.Helper()
	page, err := s.ListObservations(context.Background(), chstore.ObservationFilter{ProjectID: project, Page: 1, Limit: 1000})
	require.NoError(t, err)
	ids := make([]string, 0, len(page.Observations))
	for _, o := range page.Observations {
		ids = append(ids, o.ID)
	}
	sort.Strings(ids)
	return ids
}

func wantIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = spanID(i).String()
	}
	sort.Strings(ids)
	return ids
}

func sumCounter(t *testing.T, tt *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	require.NoError(t, err)
	var sum int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		sum += dp.Value
	}
	return sum
}

// startWithTelemetry starts an exporter with cfg whose self-metrics the
// returned Telemetry collects; both stop when the test ends.
func startWithTelemetry(t *testing.T, cfg *Config, storeCfg chstore.Config) (exporter.Traces, *componenttest.Telemetry) {
	t.Helper()
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()
	exp, err := NewFactory().CreateTraces(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), withStorage(t, componenttest.NewNopHost(), cfg, storeCfg)))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp, tt
}

func TestExportStoresObservations(t *testing.T) {
	storeCfg := chtest.Config(t)
	cfg := createDefaultConfig().(*Config)
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()

	exp, tt := startWithTelemetry(t, cfg, storeCfg)

	require.NoError(t, exp.ConsumeTraces(context.Background(), spans("proj", 0, 10)))
	require.NoError(t, exp.ConsumeTraces(context.Background(), spans("", 10, 3)), "spans without a project are dropped, not failed")
	require.NoError(t, exp.ConsumeTraces(context.Background(), spans("proj", 0, 4)), "a re-sent batch is stored again")

	s := openStore(t, storeCfg)
	assert.Equal(t, wantIDs(10), storedIDs(t, s, "proj"), "each observation reads once")
	tr, err := s.GetTrace(context.Background(), "proj", traceID(0).String())
	require.NoError(t, err)
	assert.Equal(t, "user-1", tr.UserID)
	assert.Len(t, tr.Observations, 2)

	assert.Equal(t, int64(14), sumCounter(t, tt, "otelcol_exporter_glassbox_clickhouse_rows"))
	assert.Equal(t, int64(3), sumCounter(t, tt, "otelcol_exporter_glassbox_clickhouse_invalid_spans"))
	hist, err := tt.GetMetric("otelcol_exporter_glassbox_clickhouse_insert_duration")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), hist.Data.(metricdata.Histogram[float64]).DataPoints[0].Count)
}

// TestQueueSurvivesOutage runs both durable queues through a ClickHouse
// outage and a restart of the exporter during it.
func TestQueueSurvivesOutage(t *testing.T) {
	chtest.DSN(t) // runs where ClickHouse tests run; the server here is a private one it can stop
	script, err := filepath.Abs("../../scripts/clickhouse.sh")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "clickhouse")
	tcp, httpPort := freeport.Port(t), freeport.Port(t)
	ctl := func(args ...string) {
		t.Helper()
		out, err := exec.Command(script, args...).CombinedOutput()
		require.NoError(t, err, "clickhouse.sh %v: %s", args, out)
	}
	ctl("start", dir, fmt.Sprint(tcp), fmt.Sprint(httpPort))
	t.Cleanup(func() { _ = exec.Command(script, "stop", dir).Run() })

	storageID := component.MustNewIDWithName("file_storage", "queue")
	for name, durable := range map[string]func(cfg *Config, dir string) component.Host{
		"sending_queue on file storage": func(cfg *Config, dir string) component.Host {
			q := exporterhelper.NewDefaultQueueConfig()
			q.StorageID = &storageID
			q.NumConsumers = 2
			cfg.QueueConfig = configoptional.Some(q)
			return storageHost{storageID: &diskStorage{dir: dir}}
		},
		"disk_queue": func(cfg *Config, dir string) component.Host {
			cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
			cfg.DiskQueue = configoptional.Some(DiskQueueConfig{
				Directory: dir, MaxBytes: 1 << 20, BatchBytes: 4096, FlushInterval: 50 * time.Millisecond, Consumers: 2,
			})
			return componenttest.NewNopHost()
		},
	} {
		t.Run(name, func(t *testing.T) {
			storeCfg := chstore.Config{DSN: fmt.Sprintf("clickhouse://127.0.0.1:%d", tcp), Database: "outage_" + strings.Fields(name)[0], QueryTimeout: 10 * time.Second}
			queueDir := t.TempDir()
			newExporter := func() (exporter.Traces, component.Host) {
				cfg := createDefaultConfig().(*Config)
				cfg.Timeout = 5 * time.Second
				cfg.BackOffConfig.InitialInterval, cfg.BackOffConfig.MaxInterval = 100*time.Millisecond, 500*time.Millisecond
				// A restart starts the storage extension again too.
				host := withStorage(t, durable(cfg, queueDir), cfg, storeCfg)
				require.NoError(t, confmap.Validate(cfg))
				// The queue is found again by the exporter's id, as after a collector restart.
				set := exportertest.NewNopSettings(Type)
				set.ID = component.NewIDWithName(Type, "outage")
				set.Logger = zaptest.NewLogger(t)
				exp, err := NewFactory().CreateTraces(context.Background(), set, cfg)
				require.NoError(t, err)
				return exp, host
			}

			first, host := newExporter()
			require.NoError(t, first.Start(context.Background(), host))
			require.NoError(t, first.ConsumeTraces(context.Background(), spans("proj", 0, 40)))
			s := openStore(t, storeCfg)
			require.Eventually(t, func() bool { return len(storedIDs(t, s, "proj")) == 40 }, 20*time.Second, 100*time.Millisecond)

			ctl("stop", dir)
			for i := 40; i < 100; i += 10 {
				require.NoError(t, first.ConsumeTraces(context.Background(), spans("proj", i, 10)), "the queue accepts spans while ClickHouse is down")
			}
			time.Sleep(500 * time.Millisecond) // let the consumers fail and retry at least once
			require.NoError(t, first.Shutdown(context.Background()))

			// A restarted collector with ClickHouse still down starts at once and queues more.
			second, host := newExporter()
			began := time.Now()
			require.NoError(t, second.Start(context.Background(), host))
			assert.Less(t, time.Since(began), 3*time.Second)
			defer func() { require.NoError(t, second.Shutdown(context.Background())) }()
			require.NoError(t, second.ConsumeTraces(context.Background(), spans("proj", 100, 40)))

			ctl("start", dir, fmt.Sprint(tcp), fmt.Sprint(httpPort))
			require.Eventually(t, func() bool { return len(storedIDs(t, s, "proj")) == 140 }, 60*time.Second, 200*time.Millisecond)
			assert.Equal(t, wantIDs(140), storedIDs(t, s, "proj"))
		})
	}
}

// TestDiskQueueDropsOnlyWhatClickHouseRefuses queues a record that cannot be
// decoded between two good ones: the good ones are stored, the bad one is
// dropped and counted, and nothing holds up the queue.
func TestDiskQueueDropsOnlyWhatClickHouseRefuses(t *testing.T) {
	storeCfg := chtest.Config(t)
	dir := t.TempDir()
	q, err := diskqueue.Open(dir, diskqueue.Options{MaxBytes: 1 << 20})
	require.NoError(t, err)
	good := func(first int) []byte {
		obs := mapping.Observations(spans("proj", first, 2), time.Now())
		return chstore.AppendObservationRecord(nil, obs)
	}
	require.NoError(t, q.Append(good(0)))
	require.NoError(t, q.Append([]byte{1, 5, 0xff}))
	require.NoError(t, q.Append(good(2)))
	require.NoError(t, q.Close())

	cfg := createDefaultConfig().(*Config)
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.DiskQueue = configoptional.Some(DiskQueueConfig{Directory: dir, MaxBytes: 1 << 20, BatchBytes: 1 << 20, FlushInterval: 10 * time.Millisecond, Consumers: 1})
	_, tt := startWithTelemetry(t, cfg, storeCfg)

	s := openStore(t, storeCfg)
	require.Eventually(t, func() bool { return len(storedIDs(t, s, "proj")) == 4 }, 20*time.Second, 50*time.Millisecond)
	assert.Equal(t, wantIDs(4), storedIDs(t, s, "proj"))
	assert.Equal(t, int64(4), sumCounter(t, tt, "otelcol_exporter_glassbox_clickhouse_rows"))
	require.Eventually(t, func() bool {
		size, err := tt.GetMetric("otelcol_exporter_glassbox_clickhouse_disk_queue_size")
		return err == nil && size.Data.(metricdata.Gauge[int64]).DataPoints[0].Value == 0
	}, 10*time.Second, 50*time.Millisecond, "the queue is empty once everything is delivered or dropped")
	failures, err := tt.GetMetric("otelcol_exporter_glassbox_clickhouse_insert_failures")
	require.NoError(t, err)
	var permanent int64
	for _, dp := range failures.Data.(metricdata.Sum[int64]).DataPoints {
		if v, _ := dp.Attributes.Value("retryable"); !v.AsBool() {
			permanent += dp.Value
		}
	}
	assert.Equal(t, int64(2), permanent, "the batch of three, then the bad record alone")
}

// TestDiskQueueInsertsOncePerInterval trickles spans into the queue, each
// request alone smaller than a block, within one flush_interval: two
// consumers deliver them in one insert, so ClickHouse writes one part
// rather than one per moment the queue was empty.
func TestDiskQueueInsertsOncePerInterval(t *testing.T) {
	storeCfg := chtest.Config(t)
	cfg := createDefaultConfig().(*Config)
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.DiskQueue = configoptional.Some(DiskQueueConfig{
		Directory: t.TempDir(), MaxBytes: 1 << 20, BatchBytes: 4096, FlushInterval: 5 * time.Second, Consumers: 2,
	})
	exp, tt := startWithTelemetry(t, cfg, storeCfg)
	s := openStore(t, storeCfg)
	// Inserts that succeeded; each is counted just after its rows show.
	inserts := func() uint64 {
		hist, err := tt.GetMetric("otelcol_exporter_glassbox_clickhouse_insert_duration")
		if err != nil {
			return 0 // none yet
		}
		return hist.Data.(metricdata.Histogram[float64]).DataPoints[0].Count
	}

	// A first insert connects and creates the schema, which takes its own time.
	require.NoError(t, exp.ConsumeTraces(context.Background(), spans("proj", 0, 5)))
	require.Eventually(t, func() bool { return inserts() == 1 }, 30*time.Second, 100*time.Millisecond)

	for i := 5; i < 65; i += 5 {
		require.NoError(t, exp.ConsumeTraces(context.Background(), spans("proj", i, 5)))
		time.Sleep(50 * time.Millisecond)
	}
	// An insert's rows are counted after its duration, so once all 65 are
	// counted, so is every insert.
	require.Eventually(t, func() bool { return sumCounter(t, tt, "otelcol_exporter_glassbox_clickhouse_rows") == 65 }, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, wantIDs(65), storedIDs(t, s, "proj"))
	assert.Equal(t, uint64(2), inserts(), "the warm-up's insert and the trickle's")
}

// withStorage starts a glassbox_storage extension over storeCfg, points
// cfg at it and returns base with the extension added; the extension stops
// when the test ends.
func withStorage(t *testing.T, base component.Host, cfg *Config, storeCfg chstore.Config) component.Host {
	t.Helper()
	f := storageextension.NewFactory()
	sc := f.CreateDefaultConfig().(*storageextension.Config)
	sc.DSN, sc.Database, sc.Cluster, sc.ReplicatedEngines = configopaque.String(storeCfg.DSN), storeCfg.Database, storeCfg.Cluster, storeCfg.ReplicatedEngines
	sc.QueryTimeout = storeCfg.QueryTimeout
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), sc)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	cfg.Storage = component.NewID(f.Type())
	exts := storageHost{cfg.Storage: ext}
	for id, e := range base.GetExtensions() {
		exts[id] = e
	}
	return exts
}

// storageHost offers storage extensions to the exporter's persistent queue.
type storageHost map[component.ID]component.Component

func (h storageHost) GetExtensions() map[component.ID]component.Component { return h }

// diskStorage is a storage extension that keeps each client's keys in a file,
// so a second exporter finds what the first one queued.
type diskStorage struct {
	dir string
	component.StartFunc
	component.ShutdownFunc
}

var _ storage.Extension = (*diskStorage)(nil)

func (d *diskStorage) GetClient(_ context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	file := strings.ReplaceAll(fmt.Sprintf("%s-%s-%s.gob", kind, id, name), "/", "_")
	c := &diskClient{path: filepath.Join(d.dir, file), data: map[string][]byte{}}
	raw, err := os.ReadFile(c.path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	return c, gob.NewDecoder(bytes.NewReader(raw)).Decode(&c.data)
}

type diskClient struct {
	mu   sync.Mutex
	path string
	data map[string][]byte
}

func (c *diskClient) Get(ctx context.Context, key string) ([]byte, error) {
	op := &storage.Operation{Key: key, Type: storage.Get}
	err := c.Batch(ctx, op)
	return op.Value, err
}

func (c *diskClient) Set(ctx context.Context, key string, value []byte) error {
	return c.Batch(ctx, storage.SetOperation(key, value))
}

func (c *diskClient) Delete(ctx context.Context, key string) error {
	return c.Batch(ctx, &storage.Operation{Key: key, Type: storage.Delete})
}

// Batch applies ops and writes the whole map to disk before returning, as a
// durable store would.
func (c *diskClient) Batch(_ context.Context, ops ...*storage.Operation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value = c.data[op.Key]
		case storage.Set:
			c.data[op.Key] = bytes.Clone(op.Value)
			changed = true
		case storage.Delete:
			delete(c.data, op.Key)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(c.data); err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}

func (c *diskClient) Close(context.Context) error { return nil }
