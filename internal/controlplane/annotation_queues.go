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

// Annotation queue item object types and statuses, in Langfuse's spelling.
const (
	ObjectTrace       = "TRACE"
	ObjectObservation = "OBSERVATION"
	ObjectSession     = "SESSION"

	ItemPending   = "PENDING"
	ItemCompleted = "COMPLETED"
)

// AnnotationQueue is a list of traces, observations and sessions for
// reviewers to score with the queue's score configs.
type AnnotationQueue struct {
	ID             string
	ProjectID      string
	Name           string
	Description    string
	ScoreConfigIDs []string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// AnnotationQueueItem is one object waiting for, or done with, review.
type AnnotationQueueItem struct {
	ID          string
	ProjectID   string
	QueueID     string
	ObjectID    string
	ObjectType  string
	Status      string
	CompletedAt time.Time // zero unless completed
	CompletedBy string    // the user who completed it, when known
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewAnnotationQueue is the input of CreateAnnotationQueue.
type NewAnnotationQueue struct {
	Name           string
	Description    string
	ScoreConfigIDs []string
}

const queueColumns = `id, project_id, name, description, score_config_ids, created_at, updated_at`

// CreateAnnotationQueue stores a queue; its score configs must be live
// configs of the project.
func (s *Store) CreateAnnotationQueue(ctx context.Context, projectID string, n NewAnnotationQueue) (AnnotationQueue, error) {
	name, err := checkName("annotation queue", n.Name)
	if err != nil {
		return AnnotationQueue{}, err
	}
	if n.ScoreConfigIDs == nil {
		n.ScoreConfigIDs = []string{}
	}
	var out AnnotationQueue
	err = s.inTx(ctx, func(c conn) error {
		for i, id := range n.ScoreConfigIDs {
			if slices.Index(n.ScoreConfigIDs, id) != i {
				return fmt.Errorf("%w: score config %q is listed twice", ErrInvalid, id)
			}
			cfg, err := scanScoreConfig(c.queryRow(ctx, `SELECT `+scoreConfigColumns+` FROM score_configs
				WHERE project_id = ? AND id = ?`, projectID, id))
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("score config %q: %w", id, ErrNotFound)
			}
			if err != nil {
				return fmt.Errorf("get score config %q: %w", id, err)
			}
			if cfg.IsArchived {
				return fmt.Errorf("%w: score config %q is archived", ErrInvalid, id)
			}
		}
		configs, _ := json.Marshal(n.ScoreConfigIDs)
		id, now := uuid.NewString(), s.micros()
		if _, err := c.exec(ctx, `INSERT INTO annotation_queues (`+queueColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, projectID, name, n.Description, string(configs), now, now); err != nil {
			return fmt.Errorf("create annotation queue %q: %w", name, classify(err))
		}
		var err error
		out, err = getQueue(ctx, c, projectID, id)
		return err
	})
	return out, err
}

// GetAnnotationQueue returns a queue of the project.
func (s *Store) GetAnnotationQueue(ctx context.Context, projectID, id string) (AnnotationQueue, error) {
	return getQueue(ctx, s.conn(), projectID, id)
}

func getQueue(ctx context.Context, c conn, projectID, id string) (AnnotationQueue, error) {
	q, err := scanQueue(c.queryRow(ctx, `SELECT `+queueColumns+` FROM annotation_queues WHERE project_id = ? AND id = ?`,
		projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return AnnotationQueue{}, fmt.Errorf("annotation queue %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return AnnotationQueue{}, fmt.Errorf("get annotation queue %q: %w", id, err)
	}
	return q, nil
}

func scanQueue(r scanner) (AnnotationQueue, error) {
	var (
		q                    AnnotationQueue
		configs              string
		createdAt, updatedAt int64
	)
	if err := r.Scan(&q.ID, &q.ProjectID, &q.Name, &q.Description, &configs, &createdAt, &updatedAt); err != nil {
		return AnnotationQueue{}, err
	}
	if err := json.Unmarshal([]byte(configs), &q.ScoreConfigIDs); err != nil {
		return AnnotationQueue{}, fmt.Errorf("annotation queue %q: %w", q.ID, err)
	}
	q.CreatedAt, q.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return q, nil
}

// ListAnnotationQueues returns one page of the project's queues, oldest
// first, and their number.
func (s *Store) ListAnnotationQueues(ctx context.Context, projectID string, offset, limit int) ([]AnnotationQueue, int, error) {
	return projectPage(ctx, s.conn(), "annotation queues", "annotation_queues", queueColumns, "created_at, id", projectID, offset, limit, scanQueue)
}

const queueItemColumns = `id, project_id, queue_id, object_id, object_type, status, completed_at, completed_by, created_at, updated_at`

// AddAnnotationQueueItem queues an object for review. An object already
// in the queue is not added twice: its item is returned with created false.
func (s *Store) AddAnnotationQueueItem(ctx context.Context, projectID, queueID, objectID, objectType, status string) (AnnotationQueueItem, bool, error) {
	objectID = strings.TrimSpace(objectID)
	switch {
	case objectID == "":
		return AnnotationQueueItem{}, false, fmt.Errorf("%w: objectId is required", ErrInvalid)
	case objectType != ObjectTrace && objectType != ObjectObservation && objectType != ObjectSession:
		return AnnotationQueueItem{}, false, fmt.Errorf("%w: objectType %q must be TRACE, OBSERVATION or SESSION", ErrInvalid, objectType)
	}
	if status == "" {
		status = ItemPending
	}
	if err := checkItemStatus(status); err != nil {
		return AnnotationQueueItem{}, false, err
	}
	var (
		out     AnnotationQueueItem
		created bool
	)
	err := s.inTx(ctx, func(c conn) error {
		if _, err := getQueue(ctx, c, projectID, queueID); err != nil {
			return err
		}
		now := s.micros()
		var completedAt sql.NullInt64
		if status == ItemCompleted {
			completedAt = sql.NullInt64{Int64: now, Valid: true}
		}
		res, err := c.exec(ctx, `INSERT INTO annotation_queue_items (`+queueItemColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, ?) ON CONFLICT (queue_id, object_type, object_id) DO NOTHING`,
			uuid.NewString(), projectID, queueID, objectID, objectType, status, completedAt, now, now)
		if err != nil {
			return fmt.Errorf("add annotation queue item: %w", classify(err))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		created = n == 1
		out, err = getQueueItem(ctx, c, `project_id = ? AND queue_id = ? AND object_type = ? AND object_id = ?`,
			projectID, queueID, objectType, objectID)
		return err
	})
	return out, created, err
}

func checkItemStatus(status string) error {
	if status != ItemPending && status != ItemCompleted {
		return fmt.Errorf("%w: status %q must be PENDING or COMPLETED", ErrInvalid, status)
	}
	return nil
}

// GetAnnotationQueueItem returns an item of a queue of the project.
func (s *Store) GetAnnotationQueueItem(ctx context.Context, projectID, queueID, itemID string) (AnnotationQueueItem, error) {
	return getQueueItem(ctx, s.conn(), `project_id = ? AND queue_id = ? AND id = ?`, projectID, queueID, itemID)
}

func getQueueItem(ctx context.Context, c conn, where string, args ...any) (AnnotationQueueItem, error) {
	it, err := scanQueueItem(c.queryRow(ctx, `SELECT `+queueItemColumns+` FROM annotation_queue_items WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return AnnotationQueueItem{}, fmt.Errorf("annotation queue item %v: %w", args[len(args)-1], ErrNotFound)
	}
	if err != nil {
		return AnnotationQueueItem{}, fmt.Errorf("get annotation queue item: %w", err)
	}
	return it, nil
}

func scanQueueItem(r scanner) (AnnotationQueueItem, error) {
	var (
		it                   AnnotationQueueItem
		completedAt          sql.NullInt64
		createdAt, updatedAt int64
	)
	if err := r.Scan(&it.ID, &it.ProjectID, &it.QueueID, &it.ObjectID, &it.ObjectType, &it.Status, &completedAt,
		&it.CompletedBy, &createdAt, &updatedAt); err != nil {
		return AnnotationQueueItem{}, err
	}
	it.CompletedAt = fromNullMicros(completedAt)
	it.CreatedAt, it.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return it, nil
}

// ListAnnotationQueueItems returns one page of a queue's items, oldest
// first, optionally of one status, and the number that match. An unknown
// queue is ErrNotFound.
func (s *Store) ListAnnotationQueueItems(ctx context.Context, projectID, queueID, status string, offset, limit int) ([]AnnotationQueueItem, int, error) {
	c := s.conn()
	if _, err := getQueue(ctx, c, projectID, queueID); err != nil {
		return nil, 0, err
	}
	where, args := `project_id = ? AND queue_id = ?`, []any{projectID, queueID}
	if status != "" {
		if err := checkItemStatus(status); err != nil {
			return nil, 0, err
		}
		where, args = where+` AND status = ?`, append(args, status)
	}
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM annotation_queue_items WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count annotation queue items: %w", err)
	}
	rows, err := c.query(ctx, `SELECT `+queueItemColumns+` FROM annotation_queue_items WHERE `+where+`
		ORDER BY created_at, id LIMIT ? OFFSET ?`, append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list annotation queue items: %w", err)
	}
	defer rows.Close()
	out := []AnnotationQueueItem{}
	for rows.Next() {
		it, err := scanQueueItem(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list annotation queue items: %w", err)
		}
		out = append(out, it)
	}
	return out, total, rows.Err()
}

// SetAnnotationQueueItemStatus moves an item to status. Completing records
// when and by whom (userID may be empty); reopening clears both.
func (s *Store) SetAnnotationQueueItemStatus(ctx context.Context, projectID, queueID, itemID, status, userID string) (AnnotationQueueItem, error) {
	if err := checkItemStatus(status); err != nil {
		return AnnotationQueueItem{}, err
	}
	var out AnnotationQueueItem
	err := s.inTx(ctx, func(c conn) error {
		it, err := getQueueItem(ctx, c, `project_id = ? AND queue_id = ? AND id = ?`, projectID, queueID, itemID)
		if err != nil {
			return err
		}
		now := s.micros()
		completedAt, completedBy := sql.NullInt64{}, ""
		switch {
		case status == ItemCompleted && it.Status == ItemCompleted:
			completedAt, completedBy = sql.NullInt64{Int64: it.CompletedAt.UnixMicro(), Valid: true}, it.CompletedBy
		case status == ItemCompleted:
			completedAt, completedBy = sql.NullInt64{Int64: now, Valid: true}, userID
		}
		if _, err := c.exec(ctx, `UPDATE annotation_queue_items SET status = ?, completed_at = ?, completed_by = ?, updated_at = ?
			WHERE project_id = ? AND id = ?`, status, completedAt, completedBy, now, projectID, itemID); err != nil {
			return fmt.Errorf("update annotation queue item %q: %w", itemID, err)
		}
		out, err = getQueueItem(ctx, c, `project_id = ? AND id = ?`, projectID, itemID)
		return err
	})
	return out, err
}

// DeleteAnnotationQueueItem removes an item from its queue.
func (s *Store) DeleteAnnotationQueueItem(ctx context.Context, projectID, queueID, itemID string) error {
	res, err := s.conn().exec(ctx, `DELETE FROM annotation_queue_items WHERE project_id = ? AND queue_id = ? AND id = ?`,
		projectID, queueID, itemID)
	if err != nil {
		return fmt.Errorf("delete annotation queue item %q: %w", itemID, err)
	}
	return requireOne(res, "annotation queue item "+itemID)
}

// AssignAnnotationQueue assigns a queue to a user who is a member of the
// project's organization; assigning twice is not an error.
func (s *Store) AssignAnnotationQueue(ctx context.Context, projectID, queueID, userID string) error {
	return s.inTx(ctx, func(c conn) error {
		if _, err := getQueue(ctx, c, projectID, queueID); err != nil {
			return err
		}
		var member int
		if err := c.queryRow(ctx, `SELECT COUNT(*) FROM organization_memberships m JOIN projects p ON p.org_id = m.org_id
			WHERE p.id = ? AND m.user_id = ?`, projectID, userID).Scan(&member); err != nil {
			return fmt.Errorf("check membership of user %q: %w", userID, err)
		}
		if member == 0 {
			return fmt.Errorf("user %q in the project's organization: %w", userID, ErrNotFound)
		}
		if _, err := c.exec(ctx, `INSERT INTO annotation_queue_assignments (project_id, queue_id, user_id, created_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (queue_id, user_id) DO NOTHING`, projectID, queueID, userID, s.micros()); err != nil {
			return fmt.Errorf("assign annotation queue %q: %w", queueID, classify(err))
		}
		return nil
	})
}

// UnassignAnnotationQueue removes a user's assignment to a queue.
func (s *Store) UnassignAnnotationQueue(ctx context.Context, projectID, queueID, userID string) error {
	res, err := s.conn().exec(ctx, `DELETE FROM annotation_queue_assignments WHERE project_id = ? AND queue_id = ? AND user_id = ?`,
		projectID, queueID, userID)
	if err != nil {
		return fmt.Errorf("unassign annotation queue %q: %w", queueID, err)
	}
	return requireOne(res, fmt.Sprintf("assignment of user %q to annotation queue %q", userID, queueID))
}

// AnnotationQueueAssignees returns the users assigned to a queue, by id.
func (s *Store) AnnotationQueueAssignees(ctx context.Context, projectID, queueID string) ([]string, error) {
	rows, err := s.conn().query(ctx, `SELECT user_id FROM annotation_queue_assignments WHERE project_id = ? AND queue_id = ?
		ORDER BY user_id`, projectID, queueID)
	if err != nil {
		return nil, fmt.Errorf("list annotation queue assignees: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list annotation queue assignees: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// QueueProgress counts a queue's items: those waiting, and those completed
// by each reviewer ("" for completions by API keys).
type QueueProgress struct {
	Pending     int
	Completed   int
	CompletedBy map[string]int
}

// AnnotationQueueProgress counts a queue's items by status and reviewer in
// one query.
func (s *Store) AnnotationQueueProgress(ctx context.Context, projectID, queueID string) (QueueProgress, error) {
	rows, err := s.conn().query(ctx, `SELECT status, completed_by, COUNT(*) FROM annotation_queue_items
		WHERE project_id = ? AND queue_id = ? GROUP BY status, completed_by`, projectID, queueID)
	if err != nil {
		return QueueProgress{}, fmt.Errorf("progress of annotation queue %q: %w", queueID, err)
	}
	defer rows.Close()
	p := QueueProgress{CompletedBy: map[string]int{}}
	for rows.Next() {
		var (
			status, by string
			n          int
		)
		if err := rows.Scan(&status, &by, &n); err != nil {
			return QueueProgress{}, fmt.Errorf("progress of annotation queue %q: %w", queueID, err)
		}
		if status == ItemCompleted {
			p.Completed += n
			p.CompletedBy[by] += n
		} else {
			p.Pending += n
		}
	}
	return p, rows.Err()
}
