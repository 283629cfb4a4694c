package web

import (
	"net/url"
	"time"
)

// TimeRange is the window a list or dashboard shows: a preset relative to
// now (range=24h) or a custom one (from=, to=, UTC). Like every other piece
// of state it lives in the URL.
type TimeRange struct {
	Preset   string // "" for a custom range
	From, To time.Time
}

// Preset is a relative window offered by the time-range picker.
type Preset struct {
	Key, Label string
	Span       time.Duration
}

// Presets are the windows the picker offers.
var Presets = []Preset{
	{"5m", "Last 5 minutes", 5 * time.Minute},
	{"30m", "Last 30 minutes", 30 * time.Minute},
	{"1h", "Last hour", time.Hour},
	{"3h", "Last 3 hours", 3 * time.Hour},
	{"24h", "Last 24 hours", 24 * time.Hour},
	{"7d", "Last 7 days", 7 * 24 * time.Hour},
	{"30d", "Last 30 days", 30 * 24 * time.Hour},
	{"90d", "Last 90 days", 90 * 24 * time.Hour},
	{"1y", "Last year", 365 * 24 * time.Hour},
}

// timeInput is the format of <input type="datetime-local">.
const timeInput = "2006-01-02T15:04"

// ReadTimeRange reads the window from q: from/to when both parse (either
// RFC 3339 or the datetime-local format, taken as UTC), else a preset, else
// def.
func ReadTimeRange(q url.Values, def string, now time.Time) TimeRange {
	from, errFrom := parseTime(q.Get("from"))
	to, errTo := parseTime(q.Get("to"))
	if errFrom == nil && errTo == nil && from.Before(to) {
		return TimeRange{From: from, To: to}
	}
	key := q.Get("range")
	for _, p := range Presets {
		if p.Key == key {
			return TimeRange{Preset: key, From: now.Add(-p.Span), To: now}
		}
	}
	for _, p := range Presets {
		if p.Key == def {
			return TimeRange{Preset: def, From: now.Add(-p.Span), To: now}
		}
	}
	return TimeRange{Preset: "24h", From: now.Add(-24 * time.Hour), To: now}
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	return time.ParseInLocation(timeInput, s, time.UTC)
}

// Label names the window for people.
func (tr TimeRange) Label() string {
	for _, p := range Presets {
		if p.Key == tr.Preset {
			return p.Label
		}
	}
	return tr.From.UTC().Format("2006-01-02 15:04") + " – " + tr.To.UTC().Format("2006-01-02 15:04") + " UTC"
}

// FromInput and ToInput fill the custom-range inputs.
func (tr TimeRange) FromInput() string { return tr.From.UTC().Format(timeInput) }

// ToInput fills the "to" input of the custom range.
func (tr TimeRange) ToInput() string { return tr.To.UTC().Format(timeInput) }

// Presets is the list the picker shows.
func (TimeRange) Presets() []Preset { return Presets }
