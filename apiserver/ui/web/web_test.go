package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The vendored libraries are exactly the files scripts/vendor-ui.sh took
// from the pinned npm tarballs.
func TestVendoredFilesMatchTheirChecksums(t *testing.T) {
	sums, err := static.ReadFile("static/vendor/SHA256SUMS")
	require.NoError(t, err)
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, sc.Text())
		b, err := static.ReadFile("static/vendor/" + name)
		require.NoError(t, err, name)
		got := sha256.Sum256(b)
		assert.Equal(t, want, hex.EncodeToString(got[:]), name)
		n++
	}
	assert.Equal(t, 5, n)
}

func TestAssetsAreHashedAndCompressed(t *testing.T) {
	a, err := loadAssets()
	require.NoError(t, err)
	u, err := a.url("vendor/htmx.min.js")
	require.NoError(t, err)
	assert.Regexp(t, `^/static/vendor-htmx\.min\.[0-9a-f]{12}\.js$`, u)
	_, err = a.url("missing.js")
	assert.Error(t, err)
	f := a.served[strings.TrimPrefix(u, "/static/")]
	require.NotNil(t, f)
	assert.Less(t, len(f.gz), len(f.raw)/2)
	assert.Equal(t, "text/javascript; charset=utf-8", f.contentType)
}

func TestLimiter(t *testing.T) {
	l := NewLimiter(3, time.Minute)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	for range 3 {
		ok, _ := l.Allow("ip", "a@example.com")
		require.True(t, ok)
	}
	ok, wait := l.Allow("ip", "a@example.com")
	assert.False(t, ok)
	assert.Equal(t, time.Minute, wait)
	ok, _ = l.Allow("other")
	assert.True(t, ok, "keys are counted apart")
	now = now.Add(time.Minute + time.Second)
	ok, _ = l.Allow("ip")
	assert.True(t, ok, "the window slides")
	l.Reset("a@example.com")
	ok, _ = l.Allow("a@example.com")
	assert.True(t, ok)
}

func TestTableState(t *testing.T) {
	cols := []Column{{Key: "time", Sortable: true}, {Key: "name", Sortable: true}, {Key: "cost", Hidden: true}}
	q := url.Values{"sort": {"name.asc"}, "page": {"3"}, "limit": {"100"}, "col": {"name", "cost", "bogus"}, "q": {"x"}}
	s := ReadTableState(q, cols, "time", true)
	assert.Equal(t, TableState{Sort: "name", Desc: false, Page: 3, Limit: 100, Columns: []string{"name", "cost"}, Query: q}, s)
	assert.Equal(t, 200, s.Offset())

	bad := ReadTableState(url.Values{"sort": {"cost.asc"}, "page": {"-1"}, "limit": {"7"}}, cols, "time", true)
	assert.Equal(t, "time", bad.Sort, "unsortable columns are not sorted by")
	assert.True(t, bad.Desc)
	assert.Equal(t, 1, bad.Page)
	assert.Equal(t, 50, bad.Limit)

	tb := NewTable("t", "/p/traces", cols, s)
	assert.Equal(t, []Column{cols[1], cols[2]}, tb.Columns)
	assert.True(t, tb.Shows("cost"))
	assert.Equal(t, "/p/traces?col=name&col=cost&col=bogus&limit=100&q=x&sort=name.desc", tb.SortLink("name"))
	assert.Equal(t, "↑", tb.SortMark("name"))
	assert.Contains(t, tb.NextLink(), "page=4")

	def := NewTable("t", "/p", cols, ReadTableState(url.Values{}, cols, "time", true))
	assert.Equal(t, []Column{cols[0], cols[1]}, def.Columns, "hidden columns are off by default")
}

func TestTimeRange(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tr := ReadTimeRange(url.Values{"range": {"7d"}}, "24h", now)
	assert.Equal(t, TimeRange{Preset: "7d", From: now.Add(-7 * 24 * time.Hour), To: now}, tr)
	assert.Equal(t, "Last 7 days", tr.Label())
	tr = ReadTimeRange(url.Values{"from": {"2026-04-01T10:00"}, "to": {"2026-04-02T10:30"}}, "24h", now)
	assert.Equal(t, "", tr.Preset)
	assert.Equal(t, time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC), tr.From)
	assert.Equal(t, "2026-04-02T10:30", tr.ToInput())
	tr = ReadTimeRange(url.Values{"from": {"2026-04-02T10:00"}, "to": {"2026-04-01T10:00"}, "range": {"bogus"}}, "30d", now)
	assert.Equal(t, "30d", tr.Preset, "a backwards range and an unknown preset fall back to the default")
}

func TestFormatters(t *testing.T) {
	assert.Equal(t, "850ms", FormatMillis(850))
	assert.Equal(t, "1.24s", FormatMillis(1240))
	assert.Equal(t, "3m 05s", FormatMillis(185_000))
	assert.Equal(t, "2h 01m", FormatMillis(7_260_000))
	assert.Equal(t, "$0", FormatCost(0))
	assert.Equal(t, "$0.000123", FormatCost(0.000123))
	assert.Equal(t, "$1.5000", FormatCost(1.5))
	assert.Equal(t, "1,234,567", FormatInt(1234567))
	assert.Equal(t, "-1,000", FormatInt(-1000))
	assert.Equal(t, "1,234.5", FormatFloat(1234.5))
	assert.Equal(t, "ab…", Truncate(2, "abc"))
	assert.Equal(t, "héé…", Truncate(3, "héééé"))
}
