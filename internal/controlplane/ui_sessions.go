package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Session is one signed-in browser. The token that names it lives only in
// the browser's cookie; the store keeps its SHA-256.
type Session struct {
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// newToken returns a random token for a cookie or a link, and the hash that
// is stored instead of it.
func newToken() (token, hash string, err error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", "", fmt.Errorf("generate token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(buf)
	return token, tokenHash(token), nil
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateSession signs the user in for ttl and returns the session token.
// Sessions that have expired, anyone's, are removed on the way.
func (s *Store) CreateSession(ctx context.Context, userID string, ttl time.Duration) (string, Session, error) {
	token, hash, err := newToken()
	if err != nil {
		return "", Session{}, err
	}
	now := s.micros()
	sess := Session{UserID: userID, CreatedAt: fromMicros(now), ExpiresAt: fromMicros(now + ttl.Microseconds())}
	err = s.inTx(ctx, func(c conn) error {
		if _, err := c.exec(ctx, `DELETE FROM ui_sessions WHERE expires_at <= ?`, now); err != nil {
			return fmt.Errorf("remove expired sessions: %w", err)
		}
		if _, err := c.exec(ctx, `INSERT INTO ui_sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			hash, userID, now, now+ttl.Microseconds()); err != nil {
			return fmt.Errorf("create session of %q: %w", userID, classify(err))
		}
		return nil
	})
	if err != nil {
		return "", Session{}, err
	}
	return token, sess, nil
}

// SessionUser returns the user a live session token belongs to; unknown
// and expired tokens are ErrNotFound.
func (s *Store) SessionUser(ctx context.Context, token string) (User, Session, error) {
	var (
		sess                 Session
		createdAt, expiresAt int64
	)
	err := s.conn().queryRow(ctx, `SELECT user_id, created_at, expires_at FROM ui_sessions WHERE token_hash = ? AND expires_at > ?`,
		tokenHash(token), s.micros()).Scan(&sess.UserID, &createdAt, &expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, Session{}, fmt.Errorf("session: %w", ErrNotFound)
	}
	if err != nil {
		return User{}, Session{}, fmt.Errorf("get session: %w", err)
	}
	sess.CreatedAt, sess.ExpiresAt = fromMicros(createdAt), fromMicros(expiresAt)
	u, err := s.GetUser(ctx, sess.UserID)
	if err != nil {
		return User{}, Session{}, err
	}
	return u, sess, nil
}

// DeleteSession signs one browser out; an unknown token is no error.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	if _, err := s.conn().exec(ctx, `DELETE FROM ui_sessions WHERE token_hash = ?`, tokenHash(token)); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteUserSessions signs the user out everywhere.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) error {
	if _, err := s.conn().exec(ctx, `DELETE FROM ui_sessions WHERE user_id = ?`, userID); err != nil {
		return fmt.Errorf("delete sessions of %q: %w", userID, err)
	}
	return nil
}

// CreateInviteLink returns a token, valid for ttl, with which the user
// chooses a password once (UseInviteLink). Earlier links of the user stop
// working.
func (s *Store) CreateInviteLink(ctx context.Context, userID string, ttl time.Duration) (string, error) {
	token, hash, err := newToken()
	if err != nil {
		return "", err
	}
	now := s.micros()
	err = s.inTx(ctx, func(c conn) error {
		if _, err := c.exec(ctx, `DELETE FROM user_links WHERE user_id = ? OR expires_at <= ?`, userID, now); err != nil {
			return fmt.Errorf("remove old links: %w", err)
		}
		if _, err := c.exec(ctx, `INSERT INTO user_links (token_hash, user_id, purpose, created_at, expires_at)
			VALUES (?, ?, 'invite', ?, ?)`, hash, userID, now, now+ttl.Microseconds()); err != nil {
			return fmt.Errorf("create invite link for %q: %w", userID, classify(err))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// InviteLinkUser returns the user of a live invite link.
func (s *Store) InviteLinkUser(ctx context.Context, token string) (User, error) {
	var userID string
	err := s.conn().queryRow(ctx, `SELECT user_id FROM user_links WHERE token_hash = ? AND purpose = 'invite' AND expires_at > ?`,
		tokenHash(token), s.micros()).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("invite link: %w", ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("get invite link: %w", err)
	}
	return s.GetUser(ctx, userID)
}

// UseInviteLink sets the invited user's name and password and spends the
// link: it works once.
func (s *Store) UseInviteLink(ctx context.Context, token, name, plain string) (User, error) {
	hash, err := hashPassword(plain)
	if err != nil {
		return User{}, err
	}
	var userID string
	err = s.inTx(ctx, func(c conn) error {
		err := c.queryRow(ctx, `SELECT user_id FROM user_links WHERE token_hash = ? AND purpose = 'invite' AND expires_at > ?`,
			tokenHash(token), s.micros()).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("invite link: %w", ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("get invite link: %w", err)
		}
		if _, err := c.exec(ctx, `DELETE FROM user_links WHERE user_id = ?`, userID); err != nil {
			return fmt.Errorf("spend invite link: %w", err)
		}
		_, err = c.exec(ctx, `UPDATE users SET password_hash = ?, name = CASE WHEN ? = '' THEN name ELSE ? END, updated_at = ? WHERE id = ?`,
			hash, name, name, s.micros(), userID)
		return err
	})
	if err != nil {
		return User{}, err
	}
	return s.GetUser(ctx, userID)
}
