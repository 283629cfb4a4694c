package controlplane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// ObjectPrompt is a prompt version as the object of a comment; the other
// object types are the annotation queues'.
const ObjectPrompt = "PROMPT"

// MaxCommentLength is the longest comment, in characters, as Langfuse's.
const MaxCommentLength = 3000

// Comment is a remark a person leaves on a trace, an observation, a session
// or a prompt version.
type Comment struct {
	ID           string
	ProjectID    string
	ObjectType   string
	ObjectID     string
	Content      string
	AuthorUserID string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// NewComment is the input of CreateComment.
type NewComment struct {
	ObjectType   string
	ObjectID     string
	Content      string
	AuthorUserID string
}

// CommentFilter selects comments; zero fields do not filter.
type CommentFilter struct {
	ObjectType   string
	ObjectID     string
	AuthorUserID string
	Offset       int
	Limit        int
}

const commentColumns = `id, project_id, object_type, object_id, content, author_user_id, created_at, updated_at`

// CheckCommentObjectType refuses a type comments cannot be left on.
func CheckCommentObjectType(t string) error {
	switch t {
	case ObjectTrace, ObjectObservation, ObjectSession, ObjectPrompt:
		return nil
	}
	return fmt.Errorf("%w: objectType %q must be %s, %s, %s or %s", ErrInvalid, t, ObjectTrace, ObjectObservation, ObjectSession, ObjectPrompt)
}

// CreateComment stores a comment. Whether the object exists is the
// caller's to check: traces, observations and sessions live in ClickHouse.
func (s *Store) CreateComment(ctx context.Context, projectID string, n NewComment) (Comment, error) {
	if err := CheckCommentObjectType(n.ObjectType); err != nil {
		return Comment{}, err
	}
	n.Content = strings.TrimSpace(n.Content)
	switch {
	case n.ObjectID == "":
		return Comment{}, fmt.Errorf("%w: objectId is required", ErrInvalid)
	case n.Content == "":
		return Comment{}, fmt.Errorf("%w: content must not be empty", ErrInvalid)
	case utf8.RuneCountInString(n.Content) > MaxCommentLength:
		return Comment{}, fmt.Errorf("%w: content must be at most %d characters", ErrInvalid, MaxCommentLength)
	}
	now := s.micros()
	id := uuid.NewString()
	if _, err := s.conn().exec(ctx, `INSERT INTO comments (`+commentColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		id, projectID, n.ObjectType, n.ObjectID, n.Content, n.AuthorUserID, now, now); err != nil {
		return Comment{}, fmt.Errorf("create comment: %w", classify(err))
	}
	return s.GetComment(ctx, projectID, id)
}

// GetComment returns a comment of the project.
func (s *Store) GetComment(ctx context.Context, projectID, id string) (Comment, error) {
	c, err := scanComment(s.conn().queryRow(ctx, `SELECT `+commentColumns+` FROM comments WHERE project_id = ? AND id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Comment{}, fmt.Errorf("comment %s: %w", id, ErrNotFound)
	}
	return c, err
}

// ListComments returns one page of the project's comments, oldest first,
// and the number that match.
func (s *Store) ListComments(ctx context.Context, projectID string, f CommentFilter) ([]Comment, int, error) {
	conds, args := []string{"project_id = ?"}, []any{projectID}
	for _, x := range []struct{ column, value string }{{"object_type", f.ObjectType}, {"object_id", f.ObjectID}, {"author_user_id", f.AuthorUserID}} {
		if x.value != "" {
			conds, args = append(conds, x.column+" = ?"), append(args, x.value)
		}
	}
	where := strings.Join(conds, " AND ")
	c := s.conn()
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM comments WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count comments: %w", err)
	}
	rows, err := c.query(ctx, `SELECT `+commentColumns+` FROM comments WHERE `+where+` ORDER BY created_at, id LIMIT ? OFFSET ?`,
		append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list comments: %w", err)
	}
	defer rows.Close()
	out := []Comment{}
	for rows.Next() {
		cm, err := scanComment(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list comments: %w", err)
		}
		out = append(out, cm)
	}
	return out, total, rows.Err()
}

// DeleteComment deletes a comment; authorUserID, when set, must be its
// author's.
func (s *Store) DeleteComment(ctx context.Context, projectID, id, authorUserID string) error {
	q, args := `DELETE FROM comments WHERE project_id = ? AND id = ?`, []any{projectID, id}
	if authorUserID != "" {
		q, args = q+` AND author_user_id = ?`, append(args, authorUserID)
	}
	res, err := s.conn().exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("delete comment %s: %w", id, err)
	}
	return requireOne(res, "comment "+id)
}

// PromptVersionExists reports whether the project has a prompt version
// with this id, the object id of a prompt comment.
func (s *Store) PromptVersionExists(ctx context.Context, projectID, id string) (bool, error) {
	var n int
	if err := s.conn().queryRow(ctx, `SELECT COUNT(*) FROM prompts WHERE project_id = ? AND id = ?`, projectID, id).Scan(&n); err != nil {
		return false, fmt.Errorf("look up prompt %s: %w", id, err)
	}
	return n > 0, nil
}

func scanComment(r scanner) (Comment, error) {
	var (
		c                    Comment
		createdAt, updatedAt int64
	)
	if err := r.Scan(&c.ID, &c.ProjectID, &c.ObjectType, &c.ObjectID, &c.Content, &c.AuthorUserID, &createdAt, &updatedAt); err != nil {
		return Comment{}, err
	}
	c.CreatedAt, c.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return c, nil
}
