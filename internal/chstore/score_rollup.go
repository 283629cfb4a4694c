package chstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rollups of the score filters: per project, closed day (of the score's
// timestamp), score name, trace and observation, the sum and count of the
// latest versions' values and their string values, from undeleted scores,
// computed by RefreshRollups (no work at insert). A score filter of the
// trace list reads them for the closed days whose rollup is current and the
// raw scores of every other day, instead of sorting every score of the name
// in the project to find each one's latest version.
//
// A day's rollup is current when the day's stored scores still count and
// weigh (sum of event_ts) what they did when it was computed, and the
// project's score tombstones are the same set (count and a hash of their
// (id, event_ts)): a late or rewritten score, a purge, a retention delete
// or a new tombstone all change one of them. The raw path picks a score's
// latest version over all days, the rollup within its day, so the two
// agree only while no score id has versions on two days that it reads
// differently: the job records, per day, how many of its ids have versions
// on other days (such days are read raw), and a query checks that none of
// the ids it reads raw has a version on a day it reads rolled up, else it
// reads everything raw.

var (
	scoreTracesDailyTable = table{
		name: "score_traces_daily",
		columns: `
	project_id String,
	day Date,
	generation UInt64,
	name String,
	trace_id String,
	observation_id String,
	value_sum Float64,
	value_count UInt64,
	string_values Array(String),
	multi UInt8`,
		partition:   "toYYYYMM(day)",
		orderBy:     "project_id, name, day, generation",
		granularity: 8192,
		shardKey:    "cityHash64(project_id)",
	}
	scoreTracesDailyDaysTable = table{
		name: "score_traces_daily_days",
		columns: `
	project_id String,
	day Date,
	generation UInt64,
	rows UInt64,
	event_ts_sum UInt64,
	tombstones UInt64,
	tombstones_hash UInt64,
	shared UInt64,
	computed_at DateTime('UTC')`,
		version:     "generation",
		orderBy:     "project_id, day",
		granularity: 8192,
		shardKey:    "cityHash64(project_id)",
	}
)

// scoreDayFingerprint is what a day's score rollup was computed from.
type scoreDayFingerprint struct {
	rows, eventTSSum, tombstones, tombstonesHash uint64
}

// scoreFingerprints reads, per project, the fingerprint of its score days
// with timestamps in [from, to) and its tombstones; projectID "" reads all
// projects.
func (s *Store) scoreFingerprints(ctx context.Context, projectID string, from, to time.Time) (map[string]map[string]scoreDayFingerprint, error) {
	scope, tombScope, args := "", "", []any{from.Unix(), to.Unix()}
	if projectID != "" {
		scope, tombScope = "project_id = ? AND ", " WHERE project_id = ?"
		args = []any{projectID, from.Unix(), to.Unix(), projectID}
	}
	// Tombstones by distinct (id, event_ts): a purge writes one again.
	q := "SELECT 0, project_id, toDate(timestamp) AS day, count(), sum(event_ts) FROM " + s.ddl.name(scoresTable) +
		" WHERE " + scope + "timestamp >= toDateTime(?) AND timestamp < toDateTime(?) GROUP BY project_id, day" +
		" UNION ALL SELECT 1, project_id, toDate(0), count(), sum(h) FROM (SELECT DISTINCT project_id, cityHash64(id, event_ts) AS h FROM " +
		s.ddl.name(deletedScoresTable) + tombScope + ") GROUP BY project_id"
	days := map[string]map[string]scoreDayFingerprint{}
	tombs := map[string][2]uint64{}
	err := s.query(ctx, q, args, func(r rowScanner) error {
		var (
			kind    uint8
			project string
			day     time.Time
			a, b    uint64
		)
		if err := r.Scan(&kind, &project, &day, &a, &b); err != nil {
			return err
		}
		if kind == 1 {
			tombs[project] = [2]uint64{a, b}
			return nil
		}
		if days[project] == nil {
			days[project] = map[string]scoreDayFingerprint{}
		}
		days[project][day.Format(dayLayout)] = scoreDayFingerprint{rows: a, eventTSSum: b}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the score days' fingerprints: %w", err)
	}
	for project, ds := range days {
		t := tombs[project]
		for day, fp := range ds {
			fp.tombstones, fp.tombstonesHash = t[0], t[1]
			ds[day] = fp
		}
	}
	return days, nil
}

// storedScoreDay is the current rollup of a score day.
type storedScoreDay struct {
	fp         scoreDayFingerprint
	generation uint64
	shared     uint64
}

// storedScoreDays reads the current rollup of every score day of a project
// ("" for all projects).
func (s *Store) storedScoreDays(ctx context.Context, projectID string) (map[string]map[string]storedScoreDay, error) {
	scope, args := "", []any(nil)
	if projectID != "" {
		scope, args = " WHERE project_id = ?", []any{projectID}
	}
	out := map[string]map[string]storedScoreDay{}
	err := s.query(ctx, "SELECT project_id, day, max(generation), argMax(rows, generation), argMax(event_ts_sum, generation), argMax(tombstones, generation), "+
		"argMax(tombstones_hash, generation), argMax(shared, generation) FROM "+s.ddl.name(scoreTracesDailyDaysTable)+scope+" GROUP BY project_id, day",
		args, func(r rowScanner) error {
			var (
				project string
				day     time.Time
				st      storedScoreDay
			)
			if err := r.Scan(&project, &day, &st.generation, &st.fp.rows, &st.fp.eventTSSum, &st.fp.tombstones, &st.fp.tombstonesHash, &st.shared); err != nil {
				return err
			}
			if out[project] == nil {
				out[project] = map[string]storedScoreDay{}
			}
			out[project][day.Format(dayLayout)] = st
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read the score rollup days: %w", err)
	}
	return out, nil
}

// scoreRows is the source of a trace list's score filter: rows of
// (trace_id, observation_id, s, c, cats), the sum and count of values and
// the string values of a trace's visible latest scores of one name.
type scoreRows struct {
	// rolled are the rollup rows; multiTraces the traces with a multi
	// row among them; raw the raw rows; rawTraces the traces with raw
	// scores of the name, current or not.
	rolled, multiTraces, raw, rawTraces *sqlb
	days                                int // the days read from rollups
}

// passingTraces selects the traces whose rows pass: single, the condition
// over one row (s, c, cats); grouped, the same over a trace's rows. A trace
// with one rollup row and no raw score, the bulk, brings its row only when
// it passes single, so the grouping sees few rows; a trace with raw scores
// or a multi row brings all its rows. A trace's rows on several days carry
// multi on one of them at least (the day rolled up last saw the others),
// not necessarily on all: the mark is read per trace.
func (r *scoreRows) passingTraces(single, grouped string, args ...any) *sqlb {
	q := &sqlb{}
	q.add("SELECT trace_id FROM (SELECT trace_id, s, c, cats FROM (").sub(r.rolled).add(") WHERE "+single, args...).
		add(" OR trace_id GLOBAL IN (").sub(r.multiTraces).add(" UNION ALL ").sub(r.rawTraces).add(")")
	q.add(" UNION ALL SELECT trace_id, s, c, cats FROM (").sub(r.raw).add(")) GROUP BY trace_id HAVING "+grouped, args...)
	return q
}

// scoreRollupRows returns the rows of a score filter on name that combine
// the current rollups of closed days with the raw scores of the other days,
// or nil when no rollup may be read (the raw path then applies).
func (s *Store) scoreRollupRows(ctx context.Context, projectID, name string, now time.Time) (*scoreRows, error) {
	stored, err := s.storedScoreDays(ctx, projectID)
	if err != nil || len(stored[projectID]) == 0 {
		return nil, err
	}
	// Closed days wholly within the retention.
	today := now.UTC().Truncate(24 * time.Hour)
	first := time.Time{}
	if since := s.retainedSince(projectID); since > 0 {
		first = time.Unix(since, 0).UTC().Truncate(24 * time.Hour)
		if first.Unix() < since {
			first = first.AddDate(0, 0, 1)
		}
	}
	var candidates []time.Time
	for key := range stored[projectID] {
		d, _ := time.Parse(dayLayout, key)
		if !d.Before(first) && d.Before(today) {
			candidates = append(candidates, d)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	slices.SortFunc(candidates, func(a, b time.Time) int { return a.Compare(b) })
	// The days presumed fresh: rolled up with no id shared with another
	// day. Whether an id they read rolled up has a version on a day read
	// raw is checked while the fingerprint pass confirms them: two reads
	// of the project's scores side by side rather than one after the
	// other. A day whose fingerprint moved makes the check run again.
	var presumed []freshDay
	for _, d := range candidates {
		if st := stored[projectID][d.Format(dayLayout)]; st.shared == 0 {
			presumed = append(presumed, freshDay{day: d, generation: st.generation})
		}
	}
	if len(presumed) == 0 {
		return nil, nil
	}
	check := async(func() (map[string]bool, error) { return s.sharedScoreDays(ctx, projectID, name, presumed) })
	current, err := s.scoreFingerprints(ctx, projectID, candidates[0], candidates[len(candidates)-1].AddDate(0, 0, 1))
	presumedShared, presumedErr := check()
	if err != nil {
		return nil, err
	}
	fresh := slices.DeleteFunc(slices.Clone(presumed), func(f freshDay) bool {
		key := f.day.Format(dayLayout)
		return stored[projectID][key].fp != current[projectID][key]
	})
	if len(fresh) == 0 {
		return nil, nil
	}
	shared, err := presumedShared, presumedErr
	if len(fresh) < len(presumed) && err == nil {
		shared, err = s.sharedScoreDays(ctx, projectID, name, fresh)
	}

	// A score whose versions lie on a fresh day and on a raw one has its
	// latest version picked differently by the two sides: such fresh days
	// are read raw too, which may bring more of them (a few rounds at
	// most; then everything is read raw).
	for round := 1; ; round++ {
		if err != nil {
			return nil, err
		}
		if len(shared) == 0 {
			break
		}
		fresh = slices.DeleteFunc(fresh, func(f freshDay) bool { return shared[f.day.Format(dayLayout)] })
		if len(fresh) == 0 || round == scoreRollupRounds {
			return nil, nil
		}
		shared, err = s.sharedScoreDays(ctx, projectID, name, fresh)
	}
	rawConds := s.rawScoreConds(projectID, name, fresh)

	pairs := make([]string, len(fresh))
	args := []any{projectID, name}
	for i, f := range fresh {
		pairs[i] = "(?, ?)"
		args = append(args, f.day.Format(dayLayout), f.generation)
	}
	out := &scoreRows{rolled: &sqlb{}, multiTraces: &sqlb{}, raw: &sqlb{}, rawTraces: &sqlb{}, days: len(fresh)}
	currentRows := " WHERE project_id = ? AND name = ? AND (day, generation) IN (" + strings.Join(pairs, ", ") + ")"
	out.rolled.add("SELECT trace_id, observation_id, value_sum AS s, value_count AS c, string_values AS cats FROM "+s.ddl.name(scoreTracesDailyTable)+currentRows, args...)
	// Straight from the table, so that multi = 1 moves to PREWHERE and
	// trace ids are read only where a granule holds a marked row.
	out.multiTraces.add("SELECT trace_id FROM "+s.ddl.name(scoreTracesDailyTable)+currentRows+" AND multi = 1", args...)
	out.raw.add("SELECT trace_id, observation_id, value AS s, toUInt64(1) AS c, [string_value] AS cats FROM (SELECT id, trace_id, observation_id, value, string_value, event_ts FROM "+
		s.ddl.name(scoresTable)+" WHERE ").sub(rawConds).
		add(" ORDER BY event_ts DESC LIMIT 1 BY id) WHERE (id, event_ts) GLOBAL NOT IN (SELECT id, event_ts FROM "+s.ddl.name(deletedScoresTable)+" WHERE project_id = ?)", projectID)
	out.rawTraces.add("SELECT trace_id FROM " + s.ddl.name(scoresTable) + " WHERE ").sub(rawConds)
	return out, nil
}

// sharedScoreDays returns the days of fresh holding a score of name whose id
// has a version on a day read raw (any day not in fresh).
func (s *Store) sharedScoreDays(ctx context.Context, projectID, name string, fresh []freshDay) (map[string]bool, error) {
	freshArgs := make([]any, len(fresh))
	for i, f := range fresh {
		freshArgs[i] = f.day.Format(dayLayout)
	}
	check := &sqlb{}
	check.add("SELECT DISTINCT toDate(timestamp) FROM "+s.ddl.name(scoresTable)+" WHERE project_id = ? AND name = ? AND toDate(timestamp) IN "+
		placeholders(len(fresh)), append([]any{projectID, name}, freshArgs...)...)
	check.add(" AND id GLOBAL IN (SELECT id FROM " + s.ddl.name(scoresTable) + " WHERE ").sub(s.rawScoreConds(projectID, name, fresh)).add(")")
	shared := map[string]bool{}
	err := s.query(ctx, check.String(), check.args, func(r rowScanner) error {
		var day time.Time
		if err := r.Scan(&day); err != nil {
			return err
		}
		shared[day.Format(dayLayout)] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check the score rollups: %w", err)
	}
	return shared, nil
}

// scoreRollupRounds bounds the rounds of scoreRollupRows' check.
const scoreRollupRounds = 3

// rawScoreConds selects the retained scores of name outside the fresh days.
func (s *Store) rawScoreConds(projectID, name string, fresh []freshDay) *sqlb {
	q := &sqlb{}
	q.add("project_id = ? AND name = ?"+s.andRetained(projectID, scoreDated), projectID, name)
	var (
		ranges []string
		args   []any
	)
	at := time.Unix(0, 0)
	for _, f := range fresh {
		if f.day.After(at) {
			ranges = append(ranges, "(timestamp >= toDateTime(?) AND timestamp < toDateTime(?))")
			args = append(args, at.Unix(), f.day.Unix())
		}
		at = f.day.AddDate(0, 0, 1)
	}
	ranges = append(ranges, "timestamp >= toDateTime(?)")
	args = append(args, at.Unix())
	return q.add(" AND ("+strings.Join(ranges, " OR ")+")", args...)
}

// refreshScoreRollups rolls up every closed score day whose rollup is
// missing or not current, at most maxDays of them (0: all), and prunes
// superseded generations.
func (s *Store) refreshScoreRollups(ctx context.Context, now time.Time, maxDays int) (int, int, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	current, err := s.scoreFingerprints(ctx, "", time.Unix(0, 0), today)
	if err != nil {
		return 0, 0, err
	}
	stored, err := s.storedScoreDays(ctx, "")
	if err != nil {
		return 0, 0, err
	}
	stale := map[string][]time.Time{}
	for project, days := range current {
		for key, fp := range days {
			if st, ok := stored[project][key]; !ok || st.fp != fp {
				d, _ := time.Parse(dayLayout, key)
				stale[project] = append(stale[project], d)
			}
		}
	}
	// Days whose scores are all gone roll up to nothing.
	for project, days := range stored {
		for key, st := range days {
			if _, ok := current[project][key]; !ok && st.fp.rows != 0 {
				d, _ := time.Parse(dayLayout, key)
				stale[project] = append(stale[project], d)
			}
		}
	}
	projects := make([]string, 0, len(stale))
	for p := range stale {
		projects = append(projects, p)
	}
	slices.Sort(projects)
	done, skipped := 0, 0
	for _, project := range projects {
		days := stale[project]
		slices.SortFunc(days, func(a, b time.Time) int { return a.Compare(b) })
		for len(days) > 0 {
			if maxDays > 0 && done+skipped >= maxDays {
				return done, skipped, nil
			}
			n := min(len(days), rollupBatchDays)
			if maxDays > 0 {
				n = min(n, maxDays-done-skipped)
			}
			d, sk, err := s.rollUpScores(ctx, project, days[:n])
			if err != nil {
				return done, skipped, err
			}
			done, skipped = done+d, skipped+sk
			days = days[n:]
		}
	}
	return done, skipped, s.pruneRollups(ctx, scoreTracesDailyTable, scoreTracesDailyDaysTable)
}

// rollUpScores computes the score rollup of a project's days under a new
// generation and makes it current for the days whose fingerprint held
// still while it ran.
func (s *Store) rollUpScores(ctx context.Context, projectID string, days []time.Time) (int, int, error) {
	from, to := days[0], days[len(days)-1].AddDate(0, 0, 1)
	before, err := s.scoreFingerprints(ctx, projectID, from, to)
	if err != nil {
		return 0, 0, err
	}
	generation := uint64(time.Now().UnixNano())
	dayArgs := make([]any, len(days))
	for i, d := range days {
		dayArgs[i] = d.Format(dayLayout)
	}
	inDays := "timestamp >= toDateTime(?) AND timestamp < toDateTime(?) AND toDate(timestamp) IN " + placeholders(len(days))
	dayScope := append([]any{projectID, from.Unix(), to.Unix()}, dayArgs...)
	// Each score's latest version within its day and name, as the raw path
	// picks it within the name; the shared count below guards the days.
	stmt := &sqlb{}
	// multi marks the rows of a trace whose scores of the name lie on more
	// than one day or observation: a query groups all the rows of a trace
	// with a marked row (rows rolled up before its other days were scored
	// stay unmarked); the others it reads one row per trace.
	stmt.add("INSERT INTO "+s.ddl.name(scoreTracesDailyTable)+" (project_id, day, generation, name, trace_id, observation_id, value_sum, value_count, string_values, multi)"+
		" SELECT ?, day, ?, name, trace_id, observation_id, sum(value), count(), groupUniqArray(string_value), any(multi)"+
		" FROM (SELECT toDate(timestamp) AS day, id, name, trace_id, observation_id, value, string_value, event_ts, (name, trace_id) GLOBAL IN (SELECT name, trace_id FROM "+
		s.ddl.name(scoresTable)+" WHERE project_id = ? GROUP BY name, trace_id HAVING uniqExact(toDate(timestamp), observation_id) > 1) AS multi FROM "+
		s.ddl.name(scoresTable)+" WHERE project_id = ? AND "+inDays+" ORDER BY event_ts DESC LIMIT 1 BY day, name, id)",
		append([]any{projectID, generation, projectID}, dayScope...)...)
	stmt.add(" WHERE (id, event_ts) GLOBAL NOT IN (SELECT id, event_ts FROM "+s.ddl.name(deletedScoresTable)+" WHERE project_id = ?) GROUP BY day, name, trace_id, observation_id", projectID)
	if err := s.exec(ctx, stmt.String(), stmt.args...); err != nil {
		return 0, 0, fmt.Errorf("roll up the scores of %d days of project %s: %w", len(days), projectID, err)
	}
	// Per day, the ids with versions on another day too.
	shared := map[string]uint64{}
	err = s.query(ctx, "SELECT day, count() FROM (SELECT id, groupUniqArray(toDate(timestamp)) AS ds FROM "+s.ddl.name(scoresTable)+
		" WHERE project_id = ? AND id GLOBAL IN (SELECT id FROM "+s.ddl.name(scoresTable)+" WHERE project_id = ? AND "+inDays+
		") GROUP BY id HAVING length(ds) > 1) ARRAY JOIN ds AS day GROUP BY day", append([]any{projectID}, dayScope...), func(r rowScanner) error {
		var (
			day time.Time
			n   uint64
		)
		if err := r.Scan(&day, &n); err != nil {
			return err
		}
		shared[day.Format(dayLayout)] = n
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("find scores on several days: %w", err)
	}
	after, err := s.scoreFingerprints(ctx, projectID, from, to)
	if err != nil {
		return 0, 0, err
	}
	var current []time.Time
	for _, d := range days {
		key := d.Format(dayLayout)
		if before[projectID][key] == after[projectID][key] {
			current = append(current, d)
		}
	}
	if len(current) > 0 {
		now := time.Now().UTC()
		err = s.insert(ctx, s.ddl.name(scoreTracesDailyDaysTable),
			[]string{"project_id", "day", "generation", "rows", "event_ts_sum", "tombstones", "tombstones_hash", "shared", "computed_at"},
			len(current), func(i int) []any {
				key := current[i].Format(dayLayout)
				fp := before[projectID][key]
				return []any{projectID, current[i], generation, fp.rows, fp.eventTSSum, fp.tombstones, fp.tombstonesHash, shared[key], now}
			})
		if err != nil {
			return 0, 0, fmt.Errorf("record the score rollup of %d days of project %s: %w", len(current), projectID, err)
		}
	}
	return len(current), len(days) - len(current), nil
}

// planScoreRollups finds, for each score filter among filters, the rows
// that combine the score rollups with raw scores, where they may be read.
func (s *Store) planScoreRollups(ctx context.Context, plan *rowsPlan, projectID string, filters []Filter) error {
	for _, f := range filters {
		fl, ok := tracesView.fields[f.Column]
		if !ok || (fl.kind != kindScoreNumber && fl.kind != kindScoreCategory) || f.Key == "" {
			continue
		}
		if _, done := plan.scores[f.Key]; done {
			continue
		}
		rows, err := s.scoreRollupRows(ctx, projectID, f.Key, time.Now())
		if err != nil {
			return err
		}
		if plan.scores == nil {
			plan.scores = map[string]*scoreRows{}
		}
		plan.scores[f.Key] = rows
	}
	return nil
}
