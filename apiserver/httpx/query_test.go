package httpx

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func query(target string) Query {
	return QueryOf(httptest.NewRequest(http.MethodGet, target, nil))
}

// badParam asserts a 400 whose message names param.
func badParam(t *testing.T, err error, param string) {
	t.Helper()
	var apiErr *Error
	require.True(t, errors.As(err, &apiErr), "want *Error, got %v", err)
	assert.Equal(t, http.StatusBadRequest, apiErr.Status)
	assert.Contains(t, apiErr.Message, param)
}

func TestPage(t *testing.T) {
	p, err := query("/x").Page()
	require.NoError(t, err)
	assert.Equal(t, Page{Number: 1, Limit: 50}, p)
	assert.Equal(t, 0, p.Offset())

	p, err = query("/x?page=3&limit=20").Page()
	require.NoError(t, err)
	assert.Equal(t, 40, p.Offset())

	for target, param := range map[string]string{
		"/x?page=0":            "page",
		"/x?page=-1":           "page",
		"/x?page=abc":          "page",
		"/x?page=999999999999": "page",
		"/x?limit=0":           "limit",
		"/x?limit=101":         "limit",
		"/x?limit=1.5":         "limit",
	} {
		_, err := query(target).Page()
		badParam(t, err, param)
	}
}

func TestNewList(t *testing.T) {
	l := NewList[int](nil, Page{Number: 2, Limit: 10}, 21)
	assert.Equal(t, Meta{Page: 2, Limit: 10, TotalItems: 21, TotalPages: 3}, l.Meta)
	b, err := json.Marshal(l)
	require.NoError(t, err)
	assert.JSONEq(t, `{"data":[],"meta":{"page":2,"limit":10,"totalItems":21,"totalPages":3}}`, string(b))
	assert.Equal(t, int64(0), NewList([]int{}, Page{Number: 1, Limit: 50}, 0).Meta.TotalPages)
}

func TestMicros(t *testing.T) {
	for raw, want := range map[string]time.Time{
		"2024-05-01T12:00:00Z":          time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC),
		"2024-05-01T14:00:00.5%2B02:00": time.Date(2024, 5, 1, 12, 0, 0, 5e8, time.UTC),
		"2024-05-01":                    time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
	} {
		got, err := query("/x?fromTimestamp=" + raw).Micros("fromTimestamp")
		require.NoError(t, err, raw)
		assert.Equal(t, want.UnixMicro(), got, raw)
	}
	got, err := query("/x").Micros("fromTimestamp")
	require.NoError(t, err)
	assert.Zero(t, got)
	for _, raw := range []string{"yesterday", "2024-05-01T12:00:00", "1714564800"} {
		_, err := query("/x?toTimestamp=" + raw).Micros("toTimestamp")
		badParam(t, err, "toTimestamp")
	}
}

func TestOrderBy(t *testing.T) {
	fields := []string{"timestamp", "name"}
	def := Order{Field: "timestamp", Desc: true}
	o, err := query("/x").OrderBy("orderBy", fields, def)
	require.NoError(t, err)
	assert.Equal(t, def, o)
	o, err = query("/x?orderBy=name.asc").OrderBy("orderBy", fields, def)
	require.NoError(t, err)
	assert.Equal(t, Order{Field: "name"}, o)
	for _, raw := range []string{"name", "name.up", "cost.desc", ".desc"} {
		_, err := query("/x?orderBy="+raw).OrderBy("orderBy", fields, def)
		badParam(t, err, "orderBy")
	}
}

func TestScalars(t *testing.T) {
	q := query("/x?tags=a&tags=&tags=b,c&fields=core,+io,,metrics&flag=true&bad=maybe&type=SPAN")
	assert.Equal(t, []string{"a", "b,c"}, q.Strings("tags"))
	assert.Equal(t, []string{"core", "io", "metrics"}, q.List("fields"))
	assert.Nil(t, q.Strings("absent"))

	b, err := q.Bool("flag")
	require.NoError(t, err)
	assert.True(t, *b)
	b, err = q.Bool("absent")
	require.NoError(t, err)
	assert.Nil(t, b)
	_, err = q.Bool("bad")
	badParam(t, err, "bad")

	require.NoError(t, q.Unsupported("filter", "absent"))
	badParam(t, q.Unsupported("absent", "flag"), "flag")

	v, err := q.OneOf("type", []string{"SPAN", "EVENT"})
	require.NoError(t, err)
	assert.Equal(t, "SPAN", v)
	_, err = q.OneOf("type", []string{"EVENT"})
	badParam(t, err, "type")
}

func TestValues(t *testing.T) {
	ts := FromMicros(1714564800123456)
	b, err := json.Marshal(ts)
	require.NoError(t, err)
	assert.Equal(t, `"2024-05-01T12:00:00.123Z"`, string(b))
	var back Timestamp
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, int64(1714564800123000), time.Time(back).UnixMicro())
	require.Error(t, json.Unmarshal([]byte(`"May 1st"`), &back))
	assert.Nil(t, OptionalMicros(0))
	assert.Nil(t, OptionalTime(time.Time{}))
	assert.Nil(t, OptionalString(""))
	assert.Equal(t, []int{}, NonNil[int](nil))
	assert.Equal(t, []int{1}, NonNil([]int{1}))

	assert.JSONEq(t, `{"a":1}`, string(JSONValue(`{"a":1}`)))
	assert.JSONEq(t, `"plain text"`, string(JSONValue("plain text")))
	assert.Equal(t, "null", string(JSONValue("")))
}

func TestDecodeJSONUnknownFields(t *testing.T) {
	type body struct {
		Name string `json:"name"`
	}
	req := func() *http.Request {
		return httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"name":"a","extra":1}`))
	}
	var lenient body
	require.NoError(t, DecodeJSON(req(), &lenient), "Langfuse-compatible routes ignore fields they do not know")
	assert.Equal(t, "a", lenient.Name)

	var strict body
	err := DecodeStrictJSON(req(), &strict)
	var apiErr *Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.Status)
	assert.Contains(t, apiErr.Message, `"extra"`, "the 400 names the unknown field")
}
