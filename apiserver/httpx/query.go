package httpx // import "github.com/glassbox-dev/glassbox/apiserver/httpx"

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query reads typed query parameters. Each reader returns a 400 *Error that
// names the parameter when its value is malformed.
type Query struct {
	values url.Values
}

// QueryOf returns the query parameters of r.
func QueryOf(r *http.Request) Query {
	return Query{values: r.URL.Query()}
}

// String returns the first value of name, "" when absent.
func (q Query) String(name string) string {
	return q.values.Get(name)
}

// Has reports whether name was sent at all.
func (q Query) Has(name string) bool {
	return q.values.Has(name)
}

// Strings returns every non-empty value of a repeated parameter
// (`tags=a&tags=b`); comma-separated values are not split, since a tag or an
// environment may contain a comma.
func (q Query) Strings(name string) []string {
	var out []string
	for _, v := range q.values[name] {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// List returns the comma-separated items of name, trimmed, without empties
// (`fields=core,io`).
func (q Query) List(name string) []string {
	var out []string
	for _, v := range q.values[name] {
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// Int returns name as an integer in [lo, hi], def when absent.
func (q Query) Int(name string, def, lo, hi int) (int, error) {
	raw := q.values.Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		if hi == math.MaxInt {
			return 0, BadRequest("Invalid query parameter %s=%q: expected an integer >= %d", name, raw, lo)
		}
		return 0, BadRequest("Invalid query parameter %s=%q: expected an integer from %d to %d", name, raw, lo, hi)
	}
	return n, nil
}

// Bool returns name as a boolean; nil when absent.
func (q Query) Bool(name string) (*bool, error) {
	raw := q.values.Get(name)
	if raw == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return nil, BadRequest("Invalid query parameter %s=%q: expected true or false", name, raw)
	}
	return &b, nil
}

// Micros returns name as Unix microseconds, the stores' time unit; 0 when
// absent. It accepts ISO 8601 date-times with a zone (2024-05-01T12:00:00Z,
// 2024-05-01T14:00:00.5+02:00) and plain dates (midnight UTC).
func (q Query) Micros(name string) (int64, error) {
	raw := q.values.Get(name)
	if raw == "" {
		return 0, nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, raw); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, BadRequest("Invalid query parameter %s=%q: expected an ISO 8601 date-time such as 2024-05-01T12:00:00Z", name, raw)
}

// OneOf returns name when it is one of allowed, "" when absent.
func (q Query) OneOf(name string, allowed []string) (string, error) {
	raw := q.values.Get(name)
	if raw == "" || slices.Contains(allowed, raw) {
		return raw, nil
	}
	return "", BadRequest("Invalid query parameter %s=%q: expected one of %s", name, raw, strings.Join(allowed, ", "))
}

// Unsupported returns a 400 naming the first of names that was sent: a
// parameter this server does not implement is refused rather than ignored,
// so a client never mistakes an unfiltered answer for a filtered one.
func (q Query) Unsupported(names ...string) error {
	for _, name := range names {
		if q.values.Has(name) {
			return BadRequest("Query parameter %s is not supported by this server", name)
		}
	}
	return nil
}

// Order is a sort field and direction.
type Order struct {
	Field string
	Desc  bool
}

// OrderBy parses name as `<field>.<asc|desc>` with field in fields; def when absent.
func (q Query) OrderBy(name string, fields []string, def Order) (Order, error) {
	raw := q.values.Get(name)
	if raw == "" {
		return def, nil
	}
	field, dir, ok := strings.Cut(raw, ".")
	switch {
	case !ok || (dir != "asc" && dir != "desc"):
		return Order{}, BadRequest("Invalid query parameter %s=%q: expected <field>.asc or <field>.desc", name, raw)
	case !slices.Contains(fields, field):
		return Order{}, BadRequest("Invalid query parameter %s=%q: unknown field %q, expected one of %s", name, raw, field, strings.Join(fields, ", "))
	}
	return Order{Field: field, Desc: dir == "desc"}, nil
}

// Page is a page-based list position.
type Page struct {
	Number int
	Limit  int
}

// Page limits: Langfuse's classic pagination.
const (
	defaultPageLimit = 50
	maxPageLimit     = 100
)

// Page reads `page` (from 1, default 1) and `limit` (1 to 100, default 50).
func (q Query) Page() (Page, error) {
	limit, err := q.Int("limit", defaultPageLimit, 1, maxPageLimit)
	if err != nil {
		return Page{}, err
	}
	// The upper bound keeps Offset from overflowing.
	number, err := q.Int("page", 1, 1, math.MaxInt32)
	if err != nil {
		return Page{}, err
	}
	return Page{Number: number, Limit: limit}, nil
}

// Offset is the number of items before the page.
func (p Page) Offset() int {
	return (p.Number - 1) * p.Limit
}

// Meta is the pagination block of a page-based list.
type Meta struct {
	Page       int   `json:"page"`
	Limit      int   `json:"limit"`
	TotalItems int64 `json:"totalItems"`
	TotalPages int64 `json:"totalPages"`
}

// List is a page of a page-based list.
type List[T any] struct {
	Data []T  `json:"data"`
	Meta Meta `json:"meta"`
}

// NewList returns the page p of total items holding data.
func NewList[T any](data []T, p Page, total int64) List[T] {
	if data == nil {
		data = []T{}
	}
	pages := int64(0)
	if p.Limit > 0 {
		pages = (total + int64(p.Limit) - 1) / int64(p.Limit)
	}
	return List[T]{Data: data, Meta: Meta{Page: p.Number, Limit: p.Limit, TotalItems: total, TotalPages: pages}}
}

// DecodeJSON reads the request body into v. A malformed body is a 400; one
// over the router's limit surfaces as a 413.
func DecodeJSON(r *http.Request, v any) error {
	return decodeJSON(r, v, false)
}

// DecodeStrictJSON is DecodeJSON that also refuses fields v does not have,
// with a 400 naming the field. Glassbox's own routes use it; the
// Langfuse-compatible ones ignore unknown fields as Langfuse does, so newer
// SDKs keep working.
func DecodeStrictJSON(r *http.Request, v any) error {
	return decodeJSON(r, v, true)
}

func decodeJSON(r *http.Request, v any, strict bool) error {
	dec := json.NewDecoder(r.Body)
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return err
		case errors.Is(err, io.EOF):
			return BadRequest("Invalid request body: expected a JSON object")
		}
		return BadRequest("Invalid request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return BadRequest("Invalid request body: unexpected data after the JSON value")
	}
	return nil
}

// ProjectList serves a page of the key's project's records: it reads page
// and limit, lists that page and shapes every record with view.
func ProjectList[S, V any](r *http.Request, list func(ctx context.Context, projectID string, offset, limit int) ([]S, int, error),
	view func(S) V,
) (any, error) {
	page, err := QueryOf(r).Page()
	if err != nil {
		return nil, err
	}
	records, total, err := list(r.Context(), ProjectID(r), page.Offset(), page.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]V, 0, len(records))
	for _, rec := range records {
		out = append(out, view(rec))
	}
	return NewList(out, page, int64(total)), nil
}
