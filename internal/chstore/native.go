package chstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/ch-go/compress"
	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// The observations insert speaks ClickHouse's native TCP protocol itself, so
// that a block goes from the queue's records to the wire in one pass, without
// the driver's column objects (docs/benchmarks.md). It implements the
// protocol at revision 54412, ClickHouse 18.16's, which later servers still
// accept, and only what an INSERT needs; everything else uses the driver.
const (
	nativeRevision = 54412
	// nativeMinRevision is the first that takes LowCardinality columns in
	// Native blocks (ClickHouse 18.14): the schema has them.
	nativeMinRevision = 54405
	// nativeMaxIdle bounds the idle connections kept for the next insert.
	nativeMaxIdle = 4
)

// The client's name and version the server logs in system.query_log.
const (
	nativeClientName  = "glassbox"
	nativeClientMajor = 1
	nativeClientMinor = 0
)

// nativeClient opens and pools native-protocol connections to the servers of
// a clickhouse-go DSN: the same addresses, credentials, TLS, compression,
// settings and open strategy as the driver.
type nativeClient struct {
	opts     *clickhouse.Options
	settings []nativeSetting
	lifetime time.Duration // a connection's, as the driver's ConnMaxLifetime
	next     atomic.Uint32 // round robin over opts.Addr
	mu       sync.Mutex
	idle     []*nativeConn
	closed   bool // the store closed: connections are no longer kept
}

// nativeSetting is a DSN setting. Revision 54412 sends each value in its
// setting's own binary type, which the client does not know; like the
// driver at that revision, it takes the numeric and boolean settings, which
// are all sent as varints.
type nativeSetting struct {
	name  string
	value uint64
}

func newNativeClient(opts *clickhouse.Options) (*nativeClient, error) {
	c := &nativeClient{opts: opts, lifetime: opts.ConnMaxLifetime}
	if c.lifetime == 0 {
		c.lifetime = time.Hour // the driver's default
	}
	for name, v := range opts.Settings {
		s := nativeSetting{name: name}
		switch v := v.(type) {
		case int:
			if v < 0 {
				return nil, fmt.Errorf("setting %s: the insert takes no negative settings", name)
			}
			s.value = uint64(v)
		case bool:
			if v {
				s.value = 1
			}
		default:
			return nil, fmt.Errorf("setting %s=%v: only numeric settings are supported", name, v)
		}
		c.settings = append(c.settings, s)
	}
	switch m := opts.Compression; {
	case m == nil, m.Method == clickhouse.CompressionNone,
		m.Method == clickhouse.CompressionLZ4, m.Method == clickhouse.CompressionLZ4HC, m.Method == clickhouse.CompressionZSTD:
	default:
		return nil, fmt.Errorf("compression %s is not one the native protocol has", m.Method)
	}
	return c, nil
}

// nativeConn is one connection; an insert holds it from start to finish.
type nativeConn struct {
	conn     net.Conn
	r        *chproto.Reader
	out      []byte
	compress *compress.Writer // nil sends blocks uncompressed
	revision uint64
	opened   time.Time
}

// get returns an idle connection, reused, or opens one.
func (c *nativeClient) get(ctx context.Context) (nc *nativeConn, reused bool, err error) {
	c.mu.Lock()
	for len(c.idle) > 0 {
		kept := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		if time.Since(kept.opened) < c.lifetime {
			c.mu.Unlock()
			return kept, true, nil
		}
		_ = kept.conn.Close()
	}
	c.mu.Unlock()
	nc, err = c.dial(ctx)
	return nc, false, err
}

// put keeps a connection whose insert ended cleanly for the next one.
func (c *nativeClient) put(nc *nativeConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && len(c.idle) < nativeMaxIdle {
		c.idle = append(c.idle, nc)
		return
	}
	_ = nc.conn.Close()
}

func (c *nativeClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nc := range c.idle {
		_ = nc.conn.Close()
	}
	c.idle, c.closed = nil, true
}

// dial tries the DSN's addresses in the order its open strategy gives and
// returns the first connection that completes the handshake.
func (c *nativeClient) dial(ctx context.Context) (*nativeConn, error) {
	addrs := c.opts.Addr
	if len(addrs) == 0 {
		addrs = []string{"localhost:9000"}
	}
	first := 0
	switch c.opts.ConnOpenStrategy {
	case clickhouse.ConnOpenRoundRobin:
		first = int(c.next.Add(1)-1) % len(addrs)
	case clickhouse.ConnOpenRandom:
		first = rand.IntN(len(addrs)) //nolint:gosec // spreading load, not a secret
	}
	var errs []error
	for i := range addrs {
		addr := addrs[(first+i)%len(addrs)]
		nc, err := c.open(ctx, addr)
		if err == nil {
			return nc, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return nil, errors.Join(errs...)
}

func (c *nativeClient) open(ctx context.Context, addr string) (*nativeConn, error) {
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if c.opts.TLS != nil {
		cfg := c.opts.TLS.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		conn = tls.Client(conn, cfg)
	}
	nc := &nativeConn{conn: conn, r: chproto.NewReader(conn), revision: nativeRevision, opened: time.Now()}
	if m := c.opts.Compression; m != nil && m.Method != clickhouse.CompressionNone {
		nc.compress = compress.NewWriter(compress.Level(m.Level), compress.Method(m.Method)) //nolint:gosec // a level is small
	}
	deadline := time.Now().Add(c.opts.DialTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	auth := c.opts.Auth
	if auth.Username == "" {
		auth.Username = "default" // as the driver
	}
	if err := nc.hello(auth); err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return nc, nil
}

func (nc *nativeConn) hello(auth clickhouse.Auth) error {
	b := chproto.Buffer{}
	b.PutByte(proto.ClientHello)
	proto.ClientHandshake{
		ProtocolVersion: nativeRevision,
		ClientName:      nativeClientName,
		ClientVersion:   proto.Version{Major: nativeClientMajor, Minor: nativeClientMinor},
	}.Encode(&b)
	b.PutString(auth.Database)
	b.PutString(auth.Username)
	b.PutString(auth.Password)
	if _, err := nc.conn.Write(b.Buf); err != nil {
		return err
	}
	packet, err := nc.r.ReadByte()
	if err != nil {
		return err
	}
	switch packet {
	case proto.ServerHello:
	case proto.ServerException:
		return nc.exception()
	default:
		return fmt.Errorf("handshake: unexpected packet %d", packet)
	}
	// The server writes the fields of the lower of both revisions.
	if _, err := nc.r.Str(); err != nil { // server name
		return err
	}
	for range 2 { // major, minor
		if _, err := nc.r.UVarInt(); err != nil {
			return err
		}
	}
	server, err := nc.r.UVarInt()
	if err != nil {
		return err
	}
	if server < nativeMinRevision {
		return fmt.Errorf("ClickHouse at protocol revision %d is older than 18.14", server)
	}
	nc.revision = min(server, nativeRevision)
	if _, err := nc.r.Str(); err != nil { // time zone
		return err
	}
	if _, err := nc.r.Str(); err != nil { // display name
		return err
	}
	_, err = nc.r.UVarInt() // version patch
	return err
}

func (nc *nativeConn) exception() error {
	var ex proto.Exception
	if err := ex.Decode(nc.r); err != nil {
		return err
	}
	return &ex
}

// nativeColumnHeader is a column of the server's header for an insert.
type nativeColumnHeader struct {
	name, typ string
}

// startInsert sends query and reads the columns the server expects.
func (nc *nativeConn) startInsert(query string, settings []nativeSetting) ([]nativeColumnHeader, error) {
	b := chproto.Buffer{Buf: nc.out[:0]}
	b.PutByte(proto.ClientQuery)
	b.PutString("") // query id: the server assigns one
	// Client info.
	b.PutByte(proto.ClientQueryInitial)
	b.PutString("")                           // initial user
	b.PutString("")                           // initial query id
	b.PutString(nc.conn.LocalAddr().String()) // initial address
	b.PutByte(1)                              // interface: TCP
	b.PutString(osUser())
	b.PutString(hostname())
	b.PutString(nativeClientName)
	b.PutUVarInt(nativeClientMajor)
	b.PutUVarInt(nativeClientMinor)
	b.PutUVarInt(nativeRevision)
	// The negotiated revision, at least nativeMinRevision, has both fields.
	b.PutString("") // quota key
	b.PutUVarInt(0) // version patch
	for _, s := range settings {
		b.PutString(s.name)
		b.PutUVarInt(s.value)
	}
	b.PutString("") // end of settings
	b.PutUVarInt(proto.StateComplete)
	b.PutBool(nc.compress != nil)
	b.PutString(query)
	nc.out = b.Buf
	// No external tables: an empty block.
	if err := nc.sendBlock(nil); err != nil {
		return nil, err
	}
	for {
		packet, err := nc.r.ReadByte()
		if err != nil {
			return nil, err
		}
		switch packet {
		case proto.ServerData:
			return nc.readHeader()
		case proto.ServerException:
			return nil, nc.exception()
		case proto.ServerProgress:
			if err := new(proto.Progress).Decode(nc.r, nc.revision); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("insert: unexpected packet %d before the header", packet)
		}
	}
}

// readHeader reads the header block of an insert: column names and types,
// no rows.
func (nc *nativeConn) readHeader() ([]nativeColumnHeader, error) {
	if _, err := nc.r.Str(); err != nil { // table name
		return nil, err
	}
	if nc.compress != nil {
		nc.r.EnableCompression()
		defer nc.r.DisableCompression()
	}
	// Block info: field 1 (is_overflows), field 2 (bucket_num), 0 to end.
	for {
		field, err := nc.r.UVarInt()
		if err != nil {
			return nil, err
		}
		switch field {
		case 0:
		case 1:
			_, err = nc.r.Bool()
		case 2:
			_, err = nc.r.Int32()
		default:
			err = fmt.Errorf("insert header: unknown block info field %d", field)
		}
		if err != nil {
			return nil, err
		}
		if field == 0 {
			break
		}
	}
	cols, err := nc.r.UVarInt()
	if err != nil {
		return nil, err
	}
	rows, err := nc.r.UVarInt()
	if err != nil {
		return nil, err
	}
	if rows != 0 || cols > 10_000 {
		return nil, fmt.Errorf("insert header: %d columns, %d rows", cols, rows)
	}
	header := make([]nativeColumnHeader, cols)
	for i := range header {
		if header[i].name, err = nc.r.Str(); err != nil {
			return nil, err
		}
		if header[i].typ, err = nc.r.Str(); err != nil {
			return nil, err
		}
	}
	return header, nil
}

// sendBlock sends a Data packet: the block info and a block of rows whose
// columns, name and type included, encode appends. An empty block (no
// columns) ends the external tables and the insert's data.
func (nc *nativeConn) sendBlock(encode func([]byte) []byte) error {
	b := chproto.Buffer{Buf: nc.out}
	b.PutByte(proto.ClientData)
	b.PutString("")
	start := len(b.Buf)
	b.PutUVarInt(1)
	b.PutBool(false) // is_overflows
	b.PutUVarInt(2)
	b.PutInt32(-1) // bucket_num
	b.PutUVarInt(0)
	if encode == nil {
		b.PutUVarInt(0)
		b.PutUVarInt(0)
	} else {
		b.Buf = encode(b.Buf)
	}
	if nc.compress != nil {
		if err := nc.compress.Compress(b.Buf[start:]); err != nil {
			return err
		}
		b.Buf = append(b.Buf[:start], nc.compress.Data...)
	}
	nc.out = b.Buf[:0]
	_, err := nc.conn.Write(b.Buf)
	return err
}

// finish ends the insert's data and waits for the server to commit it.
func (nc *nativeConn) finish() error {
	if err := nc.sendBlock(nil); err != nil {
		return err
	}
	for {
		packet, err := nc.r.ReadByte()
		if err != nil {
			return err
		}
		switch packet {
		case proto.ServerEndOfStream:
			return nil
		case proto.ServerException:
			return nc.exception()
		case proto.ServerProgress:
			err = new(proto.Progress).Decode(nc.r, nc.revision)
		case proto.ServerProfileInfo:
			err = new(proto.ProfileInfo).Decode(nc.r, nc.revision)
		default:
			return fmt.Errorf("insert: unexpected packet %d", packet)
		}
		if err != nil {
			return err
		}
	}
}

// pendingException returns the exception the server sent before it closed
// the connection under a write, so that the error says why the rows were
// refused rather than only that the write failed.
func (nc *nativeConn) pendingException(writeErr error) error {
	if errors.Is(writeErr, os.ErrDeadlineExceeded) {
		return writeErr // the insert's time is up or it was cancelled
	}
	_ = nc.conn.SetReadDeadline(time.Now().Add(time.Second))
	if packet, err := nc.r.ReadByte(); err == nil && packet == proto.ServerException {
		return nc.exception()
	}
	return writeErr
}

// The client info's OS user and host name, which the server logs.
var (
	osUser   = sync.OnceValue(func() string { return os.Getenv("USER") })
	hostname = sync.OnceValue(func() string { h, _ := os.Hostname(); return h })
)
