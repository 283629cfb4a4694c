package media // import "github.com/glassbox-dev/glassbox/apiserver/media"

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// secretName names the store secret that signs media URLs.
const secretName = "media-url-signing" //nolint:gosec // the name of a stored secret, not a secret

// contentPath is the signed URL's path; it is served outside the route table
// because it takes no API key, streams bodies larger than the JSON limit and
// answers with raw bytes.
var contentPath = regexp.MustCompile(`^/api/public/media/([A-Za-z0-9_-]{22})/content$`)

// safeProjectID matches the control plane's project ids.
var safeProjectID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func (s *Service) key(ctx context.Context) ([]byte, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	if s.secret == nil {
		k, err := s.store.Secret(ctx, secretName)
		if err != nil {
			return nil, err
		}
		s.secret = k
	}
	return s.secret, nil
}

func signature(key []byte, method, project, id string, expires int64) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s\n%s\n%s\n%d", method, project, id, expires)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// signedURL returns a URL for method on one media, valid for the configured TTL.
func (s *Service) signedURL(r *http.Request, method, project, id string) (string, time.Time, error) {
	key, err := s.key(r.Context())
	if err != nil {
		return "", time.Time{}, err
	}
	expiry := s.now().Add(s.cfg.URLTTL).Truncate(time.Second)
	q := url.Values{}
	q.Set("project", project)
	q.Set("expires", strconv.FormatInt(expiry.Unix(), 10))
	q.Set("signature", signature(key, method, project, id, expiry.Unix()))
	return s.baseURL(r) + "/api/public/media/" + id + "/content?" + q.Encode(), expiry, nil
}

// Content serves the signed content URLs (PUT to upload, GET to download)
// and hands every other request to next.
func (s *Service) Content(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := contentPath.FindStringSubmatch(r.URL.Path)
		if m == nil {
			next.ServeHTTP(w, r)
			return
		}
		switch r.Method {
		case http.MethodPut:
			s.upload(w, r, m[1])
		case http.MethodGet, http.MethodHead:
			s.download(w, r, m[1])
		default:
			w.Header().Set("Allow", "GET, HEAD, PUT")
			writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
		}
	})
}

func writeError(w http.ResponseWriter, status int, message string) {
	body, _ := json.Marshal(map[string]string{"message": message})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// authorize checks a signed URL and returns its media record.
func (s *Service) authorize(w http.ResponseWriter, r *http.Request, method, id string) (controlplane.Media, bool) {
	q := r.URL.Query()
	project := q.Get("project")
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || !safeProjectID.MatchString(project) {
		writeError(w, http.StatusForbidden, "Invalid or incomplete signed URL")
		return controlplane.Media{}, false
	}
	key, err := s.key(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return controlplane.Media{}, false
	}
	want := signature(key, method, project, id, expires)
	if !hmac.Equal([]byte(want), []byte(q.Get("signature"))) {
		writeError(w, http.StatusForbidden, "Signature does not match")
		return controlplane.Media{}, false
	}
	if s.now().Unix() > expires {
		writeError(w, http.StatusForbidden, "Signed URL has expired")
		return controlplane.Media{}, false
	}
	m, err := s.store.GetMedia(r.Context(), project, id)
	if errors.Is(err, controlplane.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Media not found")
		return controlplane.Media{}, false
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return controlplane.Media{}, false
	}
	return m, true
}

// upload stores the body when its length and SHA-256 are the ones registered.
func (s *Service) upload(w http.ResponseWriter, r *http.Request, id string) {
	m, ok := s.authorize(w, r, http.MethodPut, id)
	if !ok {
		return
	}
	if r.ContentLength >= 0 && r.ContentLength != m.ContentLength {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Content-Length %d differs from the registered %d bytes", r.ContentLength, m.ContentLength))
		return
	}
	if sum := r.Header.Get("x-amz-checksum-sha256"); sum != "" && sum != m.SHA256 {
		writeError(w, http.StatusBadRequest, "x-amz-checksum-sha256 differs from the registered sha256Hash")
		return
	}
	if err := s.save(r, m); err != nil {
		var bad badUpload
		if errors.As(err, &bad) {
			writeError(w, http.StatusBadRequest, bad.Error())
			return
		}
		writeError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	if err := s.store.MarkMediaStored(r.Context(), m.ProjectID, m.ID); err != nil {
		writeError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// badUpload is a body that does not match its registration.
type badUpload string

func (b badUpload) Error() string { return string(b) }

// save streams the body to a temporary file beside the target, checks its
// length and hash, and renames it into place, so a reader never sees a
// partial file.
func (s *Service) save(r *http.Request, m controlplane.Media) error {
	dir := filepath.Dir(s.path(m.ProjectID, m.ID))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, m.ID+".upload-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, hash), io.LimitReader(r.Body, m.ContentLength+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != m.ContentLength {
		return badUpload(fmt.Sprintf("Body has %d bytes, not the registered %d", n, m.ContentLength))
	}
	if got := base64.StdEncoding.EncodeToString(hash.Sum(nil)); got != m.SHA256 {
		return badUpload("Body's SHA-256 differs from the registered sha256Hash")
	}
	return os.Rename(tmp.Name(), s.path(m.ProjectID, m.ID))
}

// download serves the stored bytes. The browser is told not to sniff the
// type or run the content.
func (s *Service) download(w http.ResponseWriter, r *http.Request, id string) {
	m, ok := s.authorize(w, r, http.MethodGet, id)
	if !ok {
		return
	}
	f, err := os.Open(s.path(m.ProjectID, m.ID))
	if err != nil {
		writeError(w, http.StatusNotFound, "Media has not been uploaded yet")
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", m.ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "sandbox")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	http.ServeContent(w, r, "", m.UploadedAt, f)
}
