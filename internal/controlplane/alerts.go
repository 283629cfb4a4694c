package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Alert states. An alert starts in no_data until its first evaluation.
const (
	AlertOK      = "ok"
	AlertPending = "pending" // breaching, fewer times in a row than For
	AlertFiring  = "firing"
	AlertNoData  = "no_data"
)

// AlertOperators compare an alert's value with its threshold.
var AlertOperators = []string{">", ">=", "<", "<="}

// AlertFormats are the payload shapes a notification target takes.
var AlertFormats = []string{"json", "slack"}

// Bounds of an alert's timing. A window beyond a day reads too much on
// every evaluation; an interval under a minute keeps ClickHouse busy.
const (
	MinAlertWindow   = time.Minute
	MaxAlertWindow   = 24 * time.Hour
	MinAlertInterval = time.Minute
	MaxAlertInterval = 24 * time.Hour
	MaxAlertFor      = 100
)

// Alert is a rule over a metrics query, with its current state.
type Alert struct {
	ID        string
	ProjectID string
	Name      string
	// Query is the metrics query whose value is compared: {view, metric,
	// filters}. Denominator, when set, divides it (an error rate).
	Query       json.RawMessage
	Denominator json.RawMessage
	Operator    string
	Threshold   float64
	Window      time.Duration
	Interval    time.Duration
	// For is the number of breaching evaluations in a row that fire it.
	For          int
	TargetURL    string
	TargetFormat string
	Paused       bool

	State           string
	StateSince      time.Time
	Breaches        int      // breaching evaluations in a row
	LastValue       *float64 // nil when the last evaluation had no data
	LastEvaluatedAt time.Time
	LastError       string
	NextEvalAt      time.Time

	CreatedAt time.Time
	UpdatedAt time.Time
}

// AlertRule is what a client sets on an alert.
type AlertRule struct {
	Name         string
	Query        json.RawMessage
	Denominator  json.RawMessage
	Operator     string
	Threshold    float64
	Window       time.Duration
	Interval     time.Duration
	For          int
	TargetURL    string
	TargetFormat string
	Paused       bool
}

// AlertTransition is one change of an alert's state.
type AlertTransition struct {
	ID      string
	AlertID string
	At      time.Time
	From    string
	To      string
	Value   *float64
	// Notification is "" (none was due), "sent", or why it failed.
	Notification string
}

// AlertEvaluation is the outcome of running an alert's query once.
type AlertEvaluation struct {
	At time.Time
	// Value is nil when the query had no data (an average of no rows, a
	// ratio over a zero denominator).
	Value *float64
	// Error is why the query failed; the state is then left as it was.
	Error string
}

// Breaches reports whether value breaches the rule's threshold.
func (r AlertRule) Breaches(value float64) bool {
	switch r.Operator {
	case ">":
		return value > r.Threshold
	case ">=":
		return value >= r.Threshold
	case "<":
		return value < r.Threshold
	case "<=":
		return value <= r.Threshold
	}
	return false
}

// Rule is the client-set part of the alert.
func (a Alert) Rule() AlertRule {
	return AlertRule{Name: a.Name, Query: a.Query, Denominator: a.Denominator, Operator: a.Operator, Threshold: a.Threshold,
		Window: a.Window, Interval: a.Interval, For: a.For, TargetURL: a.TargetURL, TargetFormat: a.TargetFormat, Paused: a.Paused}
}

// check normalises and validates the rule's own fields; the API checks the
// queries against the metrics engine and the URL against the egress policy.
func (r *AlertRule) check() error {
	name, err := checkName("alert", r.Name)
	if err != nil {
		return err
	}
	r.Name = name
	var obj map[string]json.RawMessage
	if json.Unmarshal(r.Query, &obj) != nil {
		return fmt.Errorf("%w: query must be a JSON object", ErrInvalid)
	}
	if len(r.Denominator) == 0 || string(r.Denominator) == "null" {
		r.Denominator = nil
	} else if json.Unmarshal(r.Denominator, &obj) != nil {
		return fmt.Errorf("%w: denominator must be a JSON object", ErrInvalid)
	}
	switch {
	case !slices.Contains(AlertOperators, r.Operator):
		return fmt.Errorf("%w: operator must be one of %s", ErrInvalid, strings.Join(AlertOperators, ", "))
	case r.Window < MinAlertWindow || r.Window > MaxAlertWindow || r.Window%time.Second != 0:
		return fmt.Errorf("%w: window must be whole seconds from %s to %s", ErrInvalid, MinAlertWindow, MaxAlertWindow)
	case r.Interval < MinAlertInterval || r.Interval > MaxAlertInterval || r.Interval%time.Second != 0:
		return fmt.Errorf("%w: interval must be whole seconds from %s to %s", ErrInvalid, MinAlertInterval, MaxAlertInterval)
	case r.For < 1 || r.For > MaxAlertFor:
		return fmt.Errorf("%w: for must be 1 to %d consecutive evaluations", ErrInvalid, MaxAlertFor)
	case r.TargetURL == "":
		return fmt.Errorf("%w: target url is required", ErrInvalid)
	case !slices.Contains(AlertFormats, r.TargetFormat):
		return fmt.Errorf("%w: target format must be one of %s", ErrInvalid, strings.Join(AlertFormats, ", "))
	}
	return nil
}

const alertColumns = `id, project_id, name, query, denominator, operator, threshold, window_seconds, interval_seconds, for_count,
	target_url, target_format, paused, state, state_since, breaches, last_value, last_evaluated_at, last_error, next_eval_at,
	created_at, updated_at`

func scanAlert(row scanner) (Alert, error) {
	var (
		a                                       Alert
		query                                   string
		denominator                             sql.NullString
		window, interval, since, next, cre, upd int64
		paused                                  int
		lastValue                               sql.NullFloat64
		lastEval                                sql.NullInt64
	)
	if err := row.Scan(&a.ID, &a.ProjectID, &a.Name, &query, &denominator, &a.Operator, &a.Threshold, &window, &interval, &a.For,
		&a.TargetURL, &a.TargetFormat, &paused, &a.State, &since, &a.Breaches, &lastValue, &lastEval, &a.LastError, &next,
		&cre, &upd); err != nil {
		return Alert{}, err
	}
	a.Query = json.RawMessage(query)
	if denominator.Valid {
		a.Denominator = json.RawMessage(denominator.String)
	}
	a.Window, a.Interval = time.Duration(window)*time.Second, time.Duration(interval)*time.Second
	a.Paused = paused != 0
	if lastValue.Valid {
		v := lastValue.Float64
		a.LastValue = &v
	}
	a.StateSince, a.LastEvaluatedAt, a.NextEvalAt = fromMicros(since), fromNullMicros(lastEval), fromMicros(next)
	a.CreatedAt, a.UpdatedAt = fromMicros(cre), fromMicros(upd)
	return a, nil
}

// CreateAlert adds an alert to a project, due for evaluation at once.
func (s *Store) CreateAlert(ctx context.Context, projectID string, r AlertRule) (Alert, error) {
	if err := r.check(); err != nil {
		return Alert{}, err
	}
	now := s.micros()
	id := uuid.NewString()
	if _, err := s.conn().exec(ctx, `INSERT INTO alerts (`+alertColumns+`, lease_owner, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, '', 0, ?, ?, '', 0)`,
		id, projectID, r.Name, string(r.Query), nullJSON(r.Denominator), r.Operator, r.Threshold, int64(r.Window/time.Second),
		int64(r.Interval/time.Second), r.For, r.TargetURL, r.TargetFormat, boolInt(r.Paused), AlertNoData, now, now, now); err != nil {
		return Alert{}, fmt.Errorf("create alert: %w", classify(err))
	}
	return s.GetAlert(ctx, projectID, id)
}

// GetAlert returns one alert of the project.
func (s *Store) GetAlert(ctx context.Context, projectID, id string) (Alert, error) {
	return getAlert(ctx, s.conn(), projectID, id)
}

func getAlert(ctx context.Context, c conn, projectID, id string) (Alert, error) {
	a, err := scanAlert(c.queryRow(ctx, `SELECT `+alertColumns+` FROM alerts WHERE project_id = ? AND id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Alert{}, fmt.Errorf("alert %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Alert{}, fmt.Errorf("get alert %q: %w", id, err)
	}
	return a, nil
}

// ListAlerts returns one page of the project's alerts, oldest first, and
// their number.
func (s *Store) ListAlerts(ctx context.Context, projectID string, offset, limit int) ([]Alert, int, error) {
	return projectPage(ctx, s.conn(), "alerts", "alerts", alertColumns, "created_at, id", projectID, offset, limit,
		func(sc scanner) (Alert, error) { return scanAlert(sc) })
}

// UpdateAlert replaces an alert's rule. A changed rule is due at once and
// counts its breaches afresh; the state stays until that evaluation.
func (s *Store) UpdateAlert(ctx context.Context, projectID, id string, edit func(*AlertRule) error) (Alert, error) {
	var out Alert
	err := s.inTx(ctx, func(c conn) error {
		a, err := getAlert(ctx, c, projectID, id)
		if err != nil {
			return err
		}
		r := a.Rule()
		if err := edit(&r); err != nil {
			return err
		}
		if err := r.check(); err != nil {
			return err
		}
		if _, err := c.exec(ctx, `UPDATE alerts SET name = ?, query = ?, denominator = ?, operator = ?, threshold = ?,
			window_seconds = ?, interval_seconds = ?, for_count = ?, target_url = ?, target_format = ?, paused = ?,
			breaches = 0, next_eval_at = 0, updated_at = ? WHERE project_id = ? AND id = ?`,
			r.Name, string(r.Query), nullJSON(r.Denominator), r.Operator, r.Threshold, int64(r.Window/time.Second),
			int64(r.Interval/time.Second), r.For, r.TargetURL, r.TargetFormat, boolInt(r.Paused), s.micros(), projectID, id); err != nil {
			return fmt.Errorf("update alert %q: %w", id, classify(err))
		}
		out, err = getAlert(ctx, c, projectID, id)
		return err
	})
	return out, err
}

// DeleteAlert removes an alert and its history.
func (s *Store) DeleteAlert(ctx context.Context, projectID, id string) error {
	res, err := s.conn().exec(ctx, `DELETE FROM alerts WHERE project_id = ? AND id = ?`, projectID, id)
	if err != nil {
		return fmt.Errorf("delete alert %q: %w", id, err)
	}
	return requireOne(res, "alert "+id)
}

// ClaimDueAlerts leases up to limit alerts of live projects that are not
// paused and due at now, for owner, until now+lease. An alert leased to
// another owner is not claimed until that lease has passed, so that each
// alert is evaluated by one server at a time.
func (s *Store) ClaimDueAlerts(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Alert, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []Alert
	err := s.inTx(ctx, func(c conn) error {
		at := now.UnixMicro()
		query := `SELECT a.id FROM alerts a JOIN projects p ON p.id = a.project_id AND p.deleted_at IS NULL
			WHERE a.paused = 0 AND a.next_eval_at <= ? AND a.lease_until < ? ORDER BY a.next_eval_at, a.id LIMIT ?`
		if s.postgres {
			query += ` FOR UPDATE OF a SKIP LOCKED`
		}
		rows, err := c.query(ctx, query, at, at, limit)
		if err != nil {
			return fmt.Errorf("claim alerts: %w", err)
		}
		var ids []any
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close() // the scan error is the one to report
				return fmt.Errorf("claim alerts: %w", err)
			}
			ids = append(ids, id)
		}
		_ = rows.Close() // rows.Err reports what went wrong while reading
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
		if _, err := c.exec(ctx, `UPDATE alerts SET lease_owner = ?, lease_until = ? WHERE id IN `+in,
			append([]any{owner, at + lease.Microseconds()}, ids...)...); err != nil {
			return fmt.Errorf("claim alerts: %w", err)
		}
		rows, err = c.query(ctx, `SELECT `+alertColumns+` FROM alerts WHERE id IN `+in+` ORDER BY next_eval_at, id`, ids...)
		if err != nil {
			return fmt.Errorf("claim alerts: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			a, err := scanAlert(rows)
			if err != nil {
				return fmt.Errorf("claim alerts: %w", err)
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	return out, err
}

// ErrAlertLeaseLost means another server holds the alert's lease now (this
// one took longer than its lease), or the alert was deleted meanwhile: the
// evaluation is dropped.
var ErrAlertLeaseLost = errors.New("alert lease lost")

// RecordAlertEvaluation stores an evaluation by the lease's owner: the
// value, the new state, the next due time, and the lease released. When
// the state changed it returns the transition, which is in the history.
// A query error keeps the state and the breach count.
func (s *Store) RecordAlertEvaluation(ctx context.Context, owner, projectID, id string, e AlertEvaluation) (Alert, *AlertTransition, error) {
	if owner == "" {
		return Alert{}, nil, fmt.Errorf("%w: an evaluation needs the lease's owner", ErrInvalid)
	}
	var (
		out Alert
		tr  *AlertTransition
	)
	err := s.inTx(ctx, func(c conn) error {
		// A no-op update checks the lease and locks the row until the end
		// of the transaction, so that no claim slips in between.
		res, err := c.exec(ctx, `UPDATE alerts SET lease_owner = lease_owner WHERE project_id = ? AND id = ? AND lease_owner = ?`,
			projectID, id, owner)
		if err != nil {
			return fmt.Errorf("record alert evaluation: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(fmt.Errorf("alert %q: %w", id, ErrAlertLeaseLost), err)
		}
		a, err := getAlert(ctx, c, projectID, id)
		if err != nil {
			return err
		}
		at := e.At.UnixMicro()
		next := e.At.Add(a.Interval).UnixMicro()
		if e.Error != "" {
			_, err := c.exec(ctx, `UPDATE alerts SET last_evaluated_at = ?, last_error = ?, next_eval_at = ?, lease_owner = '',
				lease_until = 0 WHERE id = ?`, at, e.Error, next, id)
			if err != nil {
				return fmt.Errorf("record alert evaluation: %w", err)
			}
			out, err = getAlert(ctx, c, projectID, id)
			return err
		}
		state, breaches := nextAlertState(a, e.Value)
		since := a.StateSince.UnixMicro()
		if state != a.State {
			since = at
			tr = &AlertTransition{ID: uuid.NewString(), AlertID: id, At: fromMicros(at), From: a.State, To: state, Value: e.Value}
			if _, err := c.exec(ctx, `INSERT INTO alert_history (id, alert_id, project_id, at, from_state, to_state, value, notification)
				VALUES (?, ?, ?, ?, ?, ?, ?, '')`, tr.ID, id, projectID, at, tr.From, tr.To, nullFloat(e.Value)); err != nil {
				return fmt.Errorf("record alert transition: %w", err)
			}
		}
		if _, err := c.exec(ctx, `UPDATE alerts SET state = ?, state_since = ?, breaches = ?, last_value = ?, last_evaluated_at = ?,
			last_error = '', next_eval_at = ?, lease_owner = '', lease_until = 0 WHERE id = ?`,
			state, since, breaches, nullFloat(e.Value), at, next, id); err != nil {
			return fmt.Errorf("record alert evaluation: %w", err)
		}
		out, err = getAlert(ctx, c, projectID, id)
		return err
	})
	if err != nil {
		return Alert{}, nil, err
	}
	return out, tr, nil
}

// nextAlertState applies one evaluation's value to the alert: no value is
// no_data; a breach counts, and fires once For breaches are in a row; a
// value within the threshold is ok.
func nextAlertState(a Alert, value *float64) (state string, breaches int) {
	switch {
	case value == nil:
		return AlertNoData, 0
	case !a.Rule().Breaches(*value):
		return AlertOK, 0
	}
	breaches = a.Breaches + 1
	if breaches >= a.For || a.State == AlertFiring {
		return AlertFiring, breaches
	}
	return AlertPending, breaches
}

// SetAlertNotification records how a transition's notification went.
func (s *Store) SetAlertNotification(ctx context.Context, projectID, transitionID, notification string) error {
	res, err := s.conn().exec(ctx, `UPDATE alert_history SET notification = ? WHERE project_id = ? AND id = ?`,
		notification, projectID, transitionID)
	if err != nil {
		return fmt.Errorf("record alert notification: %w", err)
	}
	return requireOne(res, "alert transition "+transitionID)
}

// ListAlertHistory returns one page of an alert's transitions, newest
// first, and their number.
func (s *Store) ListAlertHistory(ctx context.Context, projectID, alertID string, offset, limit int) ([]AlertTransition, int, error) {
	if _, err := s.GetAlert(ctx, projectID, alertID); err != nil {
		return nil, 0, err
	}
	c := s.conn()
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM alert_history WHERE project_id = ? AND alert_id = ?`, projectID, alertID).
		Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count alert history: %w", err)
	}
	rows, err := c.query(ctx, `SELECT id, alert_id, at, from_state, to_state, value, notification FROM alert_history
		WHERE project_id = ? AND alert_id = ? ORDER BY at DESC, id LIMIT ? OFFSET ?`, projectID, alertID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list alert history: %w", err)
	}
	defer rows.Close()
	out := []AlertTransition{}
	for rows.Next() {
		var (
			t     AlertTransition
			at    int64
			value sql.NullFloat64
		)
		if err := rows.Scan(&t.ID, &t.AlertID, &at, &t.From, &t.To, &value, &t.Notification); err != nil {
			return nil, 0, fmt.Errorf("list alert history: %w", err)
		}
		t.At = fromMicros(at)
		if value.Valid {
			v := value.Float64
			t.Value = &v
		}
		out = append(out, t)
	}
	return out, total, rows.Err()
}
