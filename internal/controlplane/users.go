package controlplane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/internal/password"
)

// ErrInvalidLogin means the email is unknown, the user has no password, or
// the password is wrong; callers cannot tell which.
var ErrInvalidLogin = errors.New("invalid email or password")

// User is a person who signs in to the UI. The password hash never leaves
// the store.
type User struct {
	ID    string
	Email string // lower case
	Name  string
	// HasPassword is false for people who sign in only through SSO, and for
	// invited people who have not chosen a password yet.
	HasPassword bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewUser is the input of CreateUser.
type NewUser struct {
	ID       string // generated when empty
	Email    string
	Name     string
	Password string // optional; without one the user cannot sign in by password
}

// CreateUser adds a user. Emails are unique, compared case-insensitively.
func (s *Store) CreateUser(ctx context.Context, u NewUser) (User, error) {
	if u.ID == "" {
		u.ID = uuid.NewString()
	}
	if err := checkID("user", u.ID); err != nil {
		return User{}, err
	}
	email, err := normalizeEmail(u.Email)
	if err != nil {
		return User{}, err
	}
	var hash sql.NullString
	if u.Password != "" {
		h, err := hashPassword(u.Password)
		if err != nil {
			return User{}, err
		}
		hash = sql.NullString{String: h, Valid: true}
	}
	name := strings.TrimSpace(u.Name)
	now := s.micros()
	if _, err := s.conn().exec(ctx, `INSERT INTO users (id, email, name, password_hash, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, u.ID, email, name, hash, now, now); err != nil {
		return User{}, fmt.Errorf("create user %q: %w", email, classify(err))
	}
	return User{ID: u.ID, Email: email, Name: name, HasPassword: hash.Valid, CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now)}, nil
}

// GetUser returns a user by id.
func (s *Store) GetUser(ctx context.Context, userID string) (User, error) {
	u, _, err := s.userWhere(ctx, `id = ?`, userID)
	return u, err
}

// GetUserByEmail returns a user by email, compared case-insensitively.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (User, error) {
	u, _, err := s.userWhere(ctx, `email = ?`, strings.ToLower(strings.TrimSpace(email)))
	return u, err
}

// CheckPassword returns the user when the password matches, and
// ErrInvalidLogin otherwise. An unknown email costs the same hashing work as
// a known one, so response time does not reveal which emails exist. A hash
// with outdated parameters is replaced after a successful check.
func (s *Store) CheckPassword(ctx context.Context, email, plain string) (User, error) {
	u, hash, err := s.userWhere(ctx, `email = ?`, strings.ToLower(strings.TrimSpace(email)))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return User{}, err
	}
	if !hash.Valid {
		_, _ = password.Matches(password.Dummy, plain)
		return User{}, ErrInvalidLogin
	}
	ok, current := password.Matches(hash.String, plain)
	if !ok {
		return User{}, ErrInvalidLogin
	}
	if !current {
		if h, err := hashPassword(plain); err == nil {
			if err := s.storePasswordHash(ctx, u.ID, h); err != nil {
				return User{}, err
			}
		}
	}
	return u, nil
}

// hashPassword hashes a password to be set; one too short or too long is
// ErrInvalid.
func hashPassword(plain string) (string, error) {
	if err := password.Check(plain); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return password.Hash(plain)
}

// SetPassword replaces a user's password and ends their signed-in
// sessions, so a changed password locks out whoever knew the old one.
func (s *Store) SetPassword(ctx context.Context, userID, plain string) error {
	hash, err := hashPassword(plain)
	if err != nil {
		return err
	}
	if err := s.storePasswordHash(ctx, userID, hash); err != nil {
		return err
	}
	return s.DeleteUserSessions(ctx, userID)
}

func (s *Store) storePasswordHash(ctx context.Context, userID, hash string) error {
	res, err := s.conn().exec(ctx, `UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`,
		hash, s.micros(), userID)
	if err != nil {
		return fmt.Errorf("set password of %q: %w", userID, err)
	}
	return requireOne(res, "user "+userID)
}

func (s *Store) userWhere(ctx context.Context, where string, arg any) (User, sql.NullString, error) {
	var (
		u                    User
		hash                 sql.NullString
		createdAt, updatedAt int64
	)
	err := s.conn().queryRow(ctx, `SELECT id, email, name, password_hash, created_at, updated_at FROM users WHERE `+where, arg).
		Scan(&u.ID, &u.Email, &u.Name, &hash, &createdAt, &updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, sql.NullString{}, fmt.Errorf("user %v: %w", arg, ErrNotFound)
	}
	if err != nil {
		return User{}, sql.NullString{}, fmt.Errorf("get user %v: %w", arg, err)
	}
	u.CreatedAt, u.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	u.HasPassword = hash.Valid
	return u, hash, nil
}

func normalizeEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email {
		return "", fmt.Errorf("%w: email %q is not a plain address", ErrInvalid, email)
	}
	return email, nil
}
