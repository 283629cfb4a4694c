package storageextension

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

func loadConfig(t *testing.T, id component.ID) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestLoadConfig(t *testing.T) {
	def := loadConfig(t, component.NewID(Type))
	require.NoError(t, confmap.Validate(def))
	assert.Equal(t, createDefaultConfig(), def)
	assert.True(t, def.CreateSchema)
	assert.Equal(t, chstore.DefaultDatabase, def.Database)

	full := loadConfig(t, component.NewIDWithName(Type, "full"))
	require.NoError(t, confmap.Validate(full))
	assert.Equal(t, chstore.Config{
		DSN: "clickhouse://writer:secret@ch1:9000,ch2:9000", Database: "observability", Cluster: "c_repl",
		ReplicatedEngines: true, DialTimeout: 2 * time.Second, QueryTimeout: 10 * time.Second, MetricsMaxRowsToRead: 1000,
	}, full.Config())
	assert.False(t, full.CreateSchema)
	assert.Equal(t, "[REDACTED]", full.DSN.String(), "the DSN may hold a password")

	err := confmap.Validate(loadConfig(t, component.NewIDWithName(Type, "bad")))
	for _, want := range []string{"only the native protocol", `database "my-db"`, `cluster "a b"`} {
		assert.ErrorContains(t, err, want)
	}
	assert.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}

// statusHost records the status events a component reports.
type statusHost struct {
	component.Host
	mu     sync.Mutex
	events []*componentstatus.Event
}

func (h *statusHost) Report(e *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func (h *statusHost) statuses() []componentstatus.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []componentstatus.Status
	for _, e := range h.events {
		out = append(out, e.Status())
	}
	return out
}

func (h *statusHost) last() *componentstatus.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) == 0 {
		return nil
	}
	return h.events[len(h.events)-1]
}

// proxy forwards connections on addr to target once started.
func proxy(t *testing.T, addr, target string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	var conns sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{})
				go func() {
					_, _ = io.Copy(up, c)
					_ = up.(*net.TCPConn).CloseWrite()
					close(done)
				}()
				_, _ = io.Copy(c, up)
				_ = c.Close()
				<-done
			})
		}
	}()
}

// The extension starts while ClickHouse is down, reports a recoverable
// error that names the database, and reports OK once it has connected and
// migrated; components get the store from the start.
func TestStartsWhileClickHouseIsDownAndReportsStatus(t *testing.T) {
	target := chtest.Config(t)
	opts, err := clickhouseAddr(target.DSN)
	require.NoError(t, err)
	addr := freeport.Addr(t)

	cfg := createDefaultConfig().(*Config)
	cfg.DSN = configopaque.String("clickhouse://" + addr)
	cfg.Database = target.Database
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	ext.(*storageExtension).interval = 50 * time.Millisecond
	host := &statusHost{Host: componenttest.NewNopHost()}

	began := time.Now()
	require.NoError(t, ext.Start(context.Background(), host))
	assert.Less(t, time.Since(began), 3*time.Second, "Start does not wait for ClickHouse")
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()

	id := component.NewID(Type)
	withExt := extHost{Host: host, exts: map[component.ID]component.Component{id: ext}}
	s, err := GetStore(withExt, id, "storage")
	require.NoError(t, err)
	require.ErrorIs(t, s.Ping(context.Background()), chstore.ErrUnavailable)

	require.Eventually(t, func() bool { return host.last() != nil }, 5*time.Second, 20*time.Millisecond)
	down := host.last()
	assert.Equal(t, componentstatus.StatusRecoverableError, down.Status())
	require.Error(t, down.Err())
	assert.Contains(t, down.Err().Error(), "ClickHouse database "+target.Database)

	proxy(t, addr, opts)
	require.Eventually(t, func() bool {
		e := host.last()
		return e != nil && e.Status() == componentstatus.StatusOK
	}, 15*time.Second, 50*time.Millisecond, "OK once the background connect has migrated")
	require.NoError(t, s.Ping(context.Background()))
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusOK}, host.statuses(),
		"one event per change")
}

func clickhouseAddr(dsn string) (string, error) {
	rest, _ := strings.CutPrefix(dsn, "clickhouse://")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	host, _, _ := strings.Cut(rest, "/")
	host, _, _ = strings.Cut(host, "?")
	if _, _, err := net.SplitHostPort(host); err != nil {
		return "", err
	}
	return host, nil
}

type extHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h extHost) GetExtensions() map[component.ID]component.Component { return h.exts }

func TestGetStoreErrors(t *testing.T) {
	id := component.NewID(Type)
	_, err := GetStore(componenttest.NewNopHost(), id, "storage")
	assert.ErrorContains(t, err, `storage: no extension "glassbox_storage"`)

	other := component.MustNewID("nop")
	nop, err := extensiontest.NewNopFactory().Create(context.Background(), extensiontest.NewNopSettings(other.Type()), nil)
	require.NoError(t, err)
	_, err = GetStore(extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{other: nop}}, other, "storage")
	assert.ErrorContains(t, err, "is not a glassbox_storage extension")

	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(Type), createDefaultConfig())
	require.NoError(t, err)
	_, err = GetStore(extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{id: ext}}, id, "storage")
	assert.ErrorIs(t, err, ErrNotStarted)
}

func TestShutdownWithoutStart(t *testing.T) {
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(Type), createDefaultConfig())
	require.NoError(t, err)
	require.NoError(t, ext.Shutdown(context.Background()))
	require.NoError(t, ext.Shutdown(context.Background()))
}
