// Package media serves media attachments the way the SDKs upload them: the
// client asks for an upload URL, PUTs the bytes there without an API key
// (the URL is signed, as a presigned object-store URL would be), reports the
// upload, and later reads the record with a signed download URL. The bytes
// are kept on local disk.
package media // import "github.com/glassbox-dev/glassbox/apiserver/media"

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store is what the routes need from the control plane store.
type Store interface {
	PutMedia(ctx context.Context, projectID string, n controlplane.NewMedia) (controlplane.Media, error)
	GetMedia(ctx context.Context, projectID, id string) (controlplane.Media, error)
	MarkMediaStored(ctx context.Context, projectID, id string) error
	ReportMediaUpload(ctx context.Context, projectID, id string, r controlplane.MediaUploadReport) error
	Secret(ctx context.Context, name string) ([]byte, error)
}

// Config says where media live and how URLs to them are built.
type Config struct {
	// Dir holds the bytes, one file per project and media id.
	Dir string
	// MaxContentLength bounds one upload, in bytes.
	MaxContentLength int64
	// PublicURL is the base of upload and download URLs; empty means the
	// scheme and host the request came in on.
	PublicURL string
	// URLTTL is how long a signed URL stays valid.
	URLTTL time.Duration
}

// UploadRequest is the body of POST /api/public/media.
type UploadRequest struct {
	TraceID       string `json:"traceId,omitempty"`
	ObservationID string `json:"observationId,omitempty"`
	DatasetID     string `json:"datasetId,omitempty"`
	DatasetItemID string `json:"datasetItemId,omitempty"`
	// Field is where the media sits: input, output, metadata or (dataset
	// items) expectedOutput.
	Field         string `json:"field"`
	ContentType   string `json:"contentType"`
	ContentLength int64  `json:"contentLength"`
	// SHA256Hash is the standard base64 of the content's SHA-256 digest.
	SHA256Hash string `json:"sha256Hash"`
}

// UploadURL answers POST /api/public/media. UploadURL is null when the
// content is already stored: the client then skips the upload.
type UploadURL struct {
	MediaID   string  `json:"mediaId"`
	UploadURL *string `json:"uploadUrl"`
}

// Report is the body of PATCH /api/public/media/{mediaId}.
type Report struct {
	UploadedAt       httpx.Timestamp `json:"uploadedAt"`
	UploadHTTPStatus int             `json:"uploadHttpStatus"`
	UploadHTTPError  *string         `json:"uploadHttpError,omitempty"`
	UploadTimeMs     *int64          `json:"uploadTimeMs,omitempty"`
}

// Record answers GET /api/public/media/{mediaId}; URL is a signed download
// URL valid until URLExpiry.
type Record struct {
	MediaID       string          `json:"mediaId"`
	ContentType   string          `json:"contentType"`
	ContentLength int64           `json:"contentLength"`
	UploadedAt    httpx.Timestamp `json:"uploadedAt"`
	URL           string          `json:"url"`
	URLExpiry     httpx.Timestamp `json:"urlExpiry"`
}

// Service serves the media routes and the signed content URLs.
type Service struct {
	store Store
	cfg   Config
	now   func() time.Time

	secretMu sync.Mutex
	secret   []byte
}

// Defaults of a Config.
const (
	DefaultMaxContentLength = 100 << 20
	DefaultURLTTL           = time.Hour
)

// New returns the media service. Dir must be set; zero limits take the defaults.
func New(store Store, cfg Config) *Service {
	if cfg.MaxContentLength <= 0 {
		cfg.MaxContentLength = DefaultMaxContentLength
	}
	if cfg.URLTTL <= 0 {
		cfg.URLTTL = DefaultURLTTL
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	return &Service{store: store, cfg: cfg, now: time.Now}
}

// fields are where media can sit: in a trace or observation, or in a dataset item.
var fields = []string{"input", "output", "metadata", "expectedOutput"}

// allowedTypes are the media families accepted; anything a browser would
// run as a page (HTML, SVG, JavaScript) is not among them.
var allowedTypes = regexp.MustCompile(`^(image/(png|jpeg|jpg|gif|webp|bmp|tiff|heic|heif|avif)|audio/[a-z0-9.+-]+|video/[a-z0-9.+-]+|` +
	`application/(pdf|json|octet-stream|zip|msword|vnd\.[a-z0-9.+-]+)|text/(plain|csv|markdown|x-markdown))$`)

// Routes returns the media routes that take an API key.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{
			Method: http.MethodPost, Path: "/api/public/media", Access: httpx.ProjectKey, Handler: s.uploadURL,
			Doc: httpx.Doc{OperationID: "media_getUploadUrl", Tag: "Media", Body: UploadRequest{}, Response: UploadURL{},
				Summary: "Register media by its SHA-256 and get a signed URL to PUT the bytes to (null when already stored)."},
		},
		{
			Method: http.MethodPatch, Path: "/api/public/media/{mediaId}", Access: httpx.ProjectKey, Handler: s.report,
			Doc: httpx.Doc{OperationID: "media_patch", Tag: "Media", Body: Report{}, Status: http.StatusNoContent,
				Summary: "Report the outcome of an upload."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/media/{mediaId}", Access: httpx.ProjectKey, Handler: s.get,
			Doc: httpx.Doc{OperationID: "media_get", Tag: "Media", Response: Record{},
				Summary: "A stored media record with a signed download URL."},
		},
	}
}

// MediaID derives the id the SDKs expect from the base64 SHA-256 of the
// content: the first 22 characters of its URL-safe base64.
func MediaID(sha256Hash string) (string, error) {
	digest, err := base64.StdEncoding.DecodeString(sha256Hash)
	if err != nil || len(digest) != sha256.Size {
		return "", httpx.BadRequest("Invalid sha256Hash: expected the base64 of a SHA-256 digest")
	}
	return base64.URLEncoding.EncodeToString(digest)[:22], nil
}

func (s *Service) uploadURL(r *http.Request) (any, error) {
	var req UploadRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	id, err := MediaID(req.SHA256Hash)
	if err != nil {
		return nil, err
	}
	contentType, err := checkContentType(req.ContentType)
	if err != nil {
		return nil, err
	}
	switch {
	case req.ContentLength <= 0 || req.ContentLength > s.cfg.MaxContentLength:
		return nil, httpx.BadRequest("Invalid contentLength %d: expected 1 to %d bytes", req.ContentLength, s.cfg.MaxContentLength)
	case !slices.Contains(fields, req.Field):
		return nil, httpx.BadRequest("Invalid field %q: expected input, output, metadata or expectedOutput", req.Field)
	case req.TraceID == "" && req.DatasetItemID == "":
		return nil, httpx.BadRequest("traceId or datasetItemId is required")
	}
	project := httpx.ProjectID(r)
	m, err := s.store.PutMedia(r.Context(), project, controlplane.NewMedia{
		ID: id, SHA256: req.SHA256Hash, ContentType: contentType, ContentLength: req.ContentLength,
	})
	if err != nil {
		return nil, err
	}
	if s.stored(m) {
		return UploadURL{MediaID: id}, nil
	}
	u, _, err := s.signedURL(r, http.MethodPut, project, id)
	if err != nil {
		return nil, err
	}
	return UploadURL{MediaID: id, UploadURL: &u}, nil
}

func checkContentType(raw string) (string, error) {
	mediaType, _, err := mime.ParseMediaType(raw)
	if err != nil || !allowedTypes.MatchString(mediaType) {
		return "", httpx.BadRequest("Invalid contentType %q: expected an image, audio, video, PDF, JSON or plain-text type", raw)
	}
	return mediaType, nil
}

// stored reports whether the bytes of m are on disk.
func (s *Service) stored(m controlplane.Media) bool {
	if m.UploadedAt.IsZero() {
		return false
	}
	info, err := os.Stat(s.path(m.ProjectID, m.ID))
	return err == nil && info.Size() == m.ContentLength
}

func (s *Service) report(r *http.Request) (any, error) {
	var req Report
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.UploadHTTPStatus < 100 || req.UploadHTTPStatus > 599 {
		return nil, httpx.BadRequest("Invalid uploadHttpStatus %d: expected an HTTP status", req.UploadHTTPStatus)
	}
	rep := controlplane.MediaUploadReport{UploadedAt: time.Time(req.UploadedAt), UploadHTTPStatus: req.UploadHTTPStatus}
	if req.UploadHTTPError != nil {
		rep.UploadHTTPError = *req.UploadHTTPError
	}
	if req.UploadTimeMs != nil {
		rep.UploadTimeMs = *req.UploadTimeMs
	}
	id := r.PathValue("mediaId")
	err := s.store.ReportMediaUpload(r.Context(), httpx.ProjectID(r), id, rep)
	if errors.Is(err, controlplane.ErrNotFound) {
		return nil, httpx.NotFound("Media %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	return httpx.WithStatus(http.StatusNoContent, nil), nil
}

func (s *Service) get(r *http.Request) (any, error) {
	return s.Record(r, httpx.ProjectID(r), r.PathValue("mediaId"))
}

// Record describes a stored media of the project with a signed download
// URL; a media not uploaded yet is a 404.
func (s *Service) Record(r *http.Request, project, id string) (Record, error) {
	m, err := s.store.GetMedia(r.Context(), project, id)
	if errors.Is(err, controlplane.ErrNotFound) {
		return Record{}, httpx.NotFound("Media %s not found", id)
	}
	if err != nil {
		return Record{}, err
	}
	if !s.stored(m) {
		return Record{}, httpx.NotFound("Media %s has not been uploaded yet", id)
	}
	u, expiry, err := s.signedURL(r, http.MethodGet, project, id)
	if err != nil {
		return Record{}, err
	}
	return Record{
		MediaID: id, ContentType: m.ContentType, ContentLength: m.ContentLength,
		UploadedAt: httpx.FromTime(m.UploadedAt), URL: u, URLExpiry: httpx.FromTime(expiry),
	}, nil
}

// DownloadURL is a signed URL of a project's stored media, for the web UI,
// which checked the reader's access to the project; a missing media is
// controlplane.ErrNotFound.
func (s *Service) DownloadURL(r *http.Request, project, id string) (string, error) {
	rec, err := s.Record(r, project, id)
	var apiErr *httpx.Error
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return "", fmt.Errorf("media %s: %w", id, controlplane.ErrNotFound)
	}
	return rec.URL, err
}

// Remove deletes the stored bytes of a media (retention); bytes never
// uploaded are no error.
func (s *Service) Remove(projectID, id string) error {
	if err := os.Remove(s.path(projectID, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove media %s: %w", id, err)
	}
	return nil
}

// path is where the bytes of a media live. Project ids and media ids hold
// only URL-safe characters (checked before any use), so they are safe as
// path elements.
func (s *Service) path(projectID, id string) string {
	return filepath.Join(s.cfg.Dir, projectID, id)
}

// baseURL is the public URL prefix of this server.
func (s *Service) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s", scheme, r.Host)
}
