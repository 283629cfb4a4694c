package controlplane

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
)

// Media is an uploaded file (an image, audio, a PDF) that traces and dataset
// items reference by id. Its id is derived from the content's SHA-256, so
// the same bytes get the same id within a project.
type Media struct {
	ID            string
	ProjectID     string
	SHA256        string // standard base64 of the digest, as the SDKs send it
	ContentType   string
	ContentLength int64
	// UploadedAt is when the server stored the bytes; zero until then.
	UploadedAt time.Time
	// The client's report of its upload (PATCH /api/public/media/{id}).
	UploadHTTPStatus int
	UploadHTTPError  string
	UploadTimeMs     int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// NewMedia is the input of PutMedia.
type NewMedia struct {
	ID            string
	SHA256        string
	ContentType   string
	ContentLength int64
}

// MediaUploadReport is what a client reports after uploading.
type MediaUploadReport struct {
	UploadedAt       time.Time
	UploadHTTPStatus int
	UploadHTTPError  string
	UploadTimeMs     int64
}

const mediaColumns = `id, project_id, sha256_hash, content_type, content_length, uploaded_at, upload_http_status,
	upload_http_error, upload_time_ms, created_at, updated_at`

// PutMedia records media about to be uploaded and returns the record. When
// the id is known its record is returned; its type and length are updated
// while nothing has been uploaded yet. Every call marks the record used
// (updated_at), which is what retention goes by: the same bytes sent again
// by a newer trace are kept.
func (s *Store) PutMedia(ctx context.Context, projectID string, n NewMedia) (Media, error) {
	if n.ID == "" || n.SHA256 == "" || n.ContentType == "" || n.ContentLength <= 0 {
		return Media{}, fmt.Errorf("%w: media needs an id, a sha256 hash, a content type and a positive length", ErrInvalid)
	}
	var m Media
	err := s.inTx(ctx, func(c conn) error {
		now := s.micros()
		if _, err := c.exec(ctx, `INSERT INTO media (id, project_id, sha256_hash, content_type, content_length,
			upload_http_error, upload_http_status, upload_time_ms, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, '', 0, 0, ?, ?) ON CONFLICT (project_id, id) DO UPDATE SET updated_at = excluded.updated_at`,
			n.ID, projectID, n.SHA256, n.ContentType, n.ContentLength, now, now); err != nil {
			return fmt.Errorf("record media %s: %w", n.ID, classify(err))
		}
		if _, err := c.exec(ctx, `UPDATE media SET content_type = ?, content_length = ?, updated_at = ?
			WHERE project_id = ? AND id = ? AND uploaded_at IS NULL AND (content_type <> ? OR content_length <> ?)`,
			n.ContentType, n.ContentLength, now, projectID, n.ID, n.ContentType, n.ContentLength); err != nil {
			return fmt.Errorf("update media %s: %w", n.ID, err)
		}
		var err error
		m, err = getMedia(ctx, c, projectID, n.ID)
		return err
	})
	return m, err
}

// ExpireMedia deletes the project's media records last used before cutoff
// and returns their ids, whose bytes the caller removes.
func (s *Store) ExpireMedia(ctx context.Context, projectID string, cutoff time.Time) ([]string, error) {
	rows, err := s.conn().query(ctx, `DELETE FROM media WHERE project_id = ? AND updated_at < ? RETURNING id`, projectID, cutoff.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("expire media of %s: %w", projectID, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("expire media of %s: %w", projectID, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// GetMedia returns a media record of the project.
func (s *Store) GetMedia(ctx context.Context, projectID, id string) (Media, error) {
	return getMedia(ctx, s.conn(), projectID, id)
}

func getMedia(ctx context.Context, c conn, projectID, id string) (Media, error) {
	var (
		m                    Media
		uploadedAt           sql.NullInt64
		createdAt, updatedAt int64
	)
	err := c.queryRow(ctx, `SELECT `+mediaColumns+` FROM media WHERE project_id = ? AND id = ?`, projectID, id).
		Scan(&m.ID, &m.ProjectID, &m.SHA256, &m.ContentType, &m.ContentLength, &uploadedAt, &m.UploadHTTPStatus,
			&m.UploadHTTPError, &m.UploadTimeMs, &createdAt, &updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Media{}, fmt.Errorf("media %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Media{}, fmt.Errorf("get media %s: %w", id, err)
	}
	m.UploadedAt = fromNullMicros(uploadedAt)
	m.CreatedAt, m.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return m, nil
}

// MarkMediaStored records that the server holds the bytes of a media.
func (s *Store) MarkMediaStored(ctx context.Context, projectID, id string) error {
	now := s.micros()
	res, err := s.conn().exec(ctx, `UPDATE media SET uploaded_at = ?, updated_at = ? WHERE project_id = ? AND id = ?`,
		now, now, projectID, id)
	if err != nil {
		return fmt.Errorf("mark media %s stored: %w", id, err)
	}
	return requireOne(res, "media "+id)
}

// ReportMediaUpload records the client's account of its upload.
func (s *Store) ReportMediaUpload(ctx context.Context, projectID, id string, r MediaUploadReport) error {
	res, err := s.conn().exec(ctx, `UPDATE media SET upload_http_status = ?, upload_http_error = ?, upload_time_ms = ?,
		updated_at = ? WHERE project_id = ? AND id = ?`,
		r.UploadHTTPStatus, r.UploadHTTPError, r.UploadTimeMs, s.micros(), projectID, id)
	if err != nil {
		return fmt.Errorf("report upload of media %s: %w", id, err)
	}
	return requireOne(res, "media "+id)
}

// secretBytes is the length of generated server secrets.
const secretBytes = 32

// Secret returns the named server secret, creating a random one on first
// use. Every API server sharing the store gets the same value, so a URL one
// signs another accepts.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	buf := make([]byte, secretBytes)
	if _, err := rand.Read(buf); err != nil {
		return nil, fmt.Errorf("generate secret %q: %w", name, err)
	}
	c := s.conn()
	if _, err := c.exec(ctx, `INSERT INTO server_secrets (name, value, created_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO NOTHING`, name, base64.StdEncoding.EncodeToString(buf), s.micros()); err != nil {
		return nil, fmt.Errorf("create secret %q: %w", name, err)
	}
	var value string
	if err := c.queryRow(ctx, `SELECT value FROM server_secrets WHERE name = ?`, name).Scan(&value); err != nil {
		return nil, fmt.Errorf("read secret %q: %w", name, err)
	}
	return base64.StdEncoding.DecodeString(value)
}
