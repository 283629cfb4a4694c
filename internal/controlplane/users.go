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
	"golang.org/x/crypto/bcrypt"
)

// ErrInvalidLogin means the email is unknown, the user has no password, or
// the password is wrong; callers cannot tell which.
var ErrInvalidLogin = errors.New("invalid email or password")

// minPasswordLength is the shortest password accepted; bcrypt itself caps
// input at 72 bytes.
const minPasswordLength = 8

// User is a person who signs in to the UI. The password hash never leaves
// the store.
type User struct {
	ID        string
	Email     string // lower case
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
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
	return User{ID: u.ID, Email: email, Name: name, CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now)}, nil
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
// ErrInvalidLogin otherwise. An unknown email costs the same bcrypt work as
// a known one, so response time does not reveal which emails exist.
func (s *Store) CheckPassword(ctx context.Context, email, password string) (User, error) {
	u, hash, err := s.userWhere(ctx, `email = ?`, strings.ToLower(strings.TrimSpace(email)))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return User{}, err
	}
	if !hash.Valid {
		_ = bcrypt.CompareHashAndPassword(dummyPasswordHash, []byte(password))
		return User{}, ErrInvalidLogin
	}
	if bcrypt.CompareHashAndPassword([]byte(hash.String), []byte(password)) != nil {
		return User{}, ErrInvalidLogin
	}
	return u, nil
}

// SetPassword replaces a user's password.
func (s *Store) SetPassword(ctx context.Context, userID, password string) error {
	hash, err := hashPassword(password)
	if err != nil {
		return err
	}
	res, err := s.conn().exec(ctx, `UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`,
		hash, s.micros(), userID)
	if err != nil {
		return fmt.Errorf("set password of %q: %w", userID, err)
	}
	return requireOne(res, "user "+userID)
}

// dummyPasswordHash is a bcrypt hash at the default cost, compared against
// when no real hash exists; the result is discarded.
var dummyPasswordHash = []byte("$2a$10$jJ8RVjLQ0n1/FASSm20NzuVwOxIvfGf9CxFkPmkIs2iNESck4Fjci")

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
	return u, hash, nil
}

func hashPassword(password string) (string, error) {
	if len(password) < minPasswordLength {
		return "", fmt.Errorf("%w: password must have at least %d characters", ErrInvalid, minPasswordLength)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("%w: password: %w", ErrInvalid, err)
	}
	return string(h), nil
}

func normalizeEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email {
		return "", fmt.Errorf("%w: email %q is not a plain address", ErrInvalid, email)
	}
	return email, nil
}
