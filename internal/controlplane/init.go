package controlplane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Environment variables read by InitFromEnv.
const (
	EnvInitOrgID       = "GLASSBOX_INIT_ORG_ID"
	EnvInitOrgName     = "GLASSBOX_INIT_ORG_NAME"
	EnvInitProjectID   = "GLASSBOX_INIT_PROJECT_ID"
	EnvInitProjectName = "GLASSBOX_INIT_PROJECT_NAME"
	// EnvInitProjectRetentionDays is the retention of the project when init
	// creates it.
	EnvInitProjectRetentionDays = "GLASSBOX_INIT_PROJECT_RETENTION_DAYS"
	EnvInitPublicKey            = "GLASSBOX_INIT_PUBLIC_KEY"
	EnvInitSecretKey            = "GLASSBOX_INIT_SECRET_KEY"
	EnvInitUserEmail            = "GLASSBOX_INIT_USER_EMAIL"
	EnvInitUserName             = "GLASSBOX_INIT_USER_NAME"
	EnvInitUserPassword         = "GLASSBOX_INIT_USER_PASSWORD"
)

type initSpec struct {
	orgID, orgName, projectID, projectName string
	retentionDays                          int
	publicKey, secretKey                   string
	email, userName, password              string
}

// InitFromEnv creates the organization, project, key pair and owner user
// named by the GLASSBOX_INIT_* variables, for deployments configured without
// the UI. It is idempotent: what exists already is left as it is (names,
// roles and passwords changed later are kept), so it can run on every start
// and on several replicas at once. It fails instead of overwriting when the
// environment contradicts the store: a key with another secret, a key or
// project that belongs elsewhere, a revoked key or a deleted project.
func (s *Store) InitFromEnv(ctx context.Context, getenv func(string) string) error {
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }
	spec := initSpec{
		orgID: env(EnvInitOrgID), orgName: env(EnvInitOrgName),
		projectID: env(EnvInitProjectID), projectName: env(EnvInitProjectName),
		publicKey: env(EnvInitPublicKey), secretKey: env(EnvInitSecretKey),
		email: env(EnvInitUserEmail), userName: env(EnvInitUserName), password: getenv(EnvInitUserPassword),
	}
	if raw := env(EnvInitProjectRetentionDays); raw != "" {
		days, err := strconv.Atoi(raw)
		if err == nil {
			err = CheckRetention(days)
		} else {
			err = fmt.Errorf("%w: not a whole number of days", ErrInvalid)
		}
		if err != nil {
			return fmt.Errorf("headless init: %s=%q: %w", EnvInitProjectRetentionDays, raw, err)
		}
		spec.retentionDays = days
	}
	if err := spec.validate(); err != nil {
		return fmt.Errorf("headless init: %w", err)
	}
	if spec.orgID == "" {
		return nil
	}
	err := s.initOrganization(ctx, spec)
	if err == nil && spec.projectID != "" {
		err = s.initProject(ctx, spec)
	}
	if err == nil && spec.publicKey != "" {
		err = s.initAPIKey(ctx, spec)
	}
	if err == nil && spec.email != "" {
		err = s.initUser(ctx, spec)
	}
	if err != nil {
		return fmt.Errorf("headless init: %w", err)
	}
	return nil
}

// validate rejects combinations that could not be applied idempotently,
// such as a name without the id that identifies it on the next start.
func (spec initSpec) validate() error {
	var errs []error
	need := func(cond bool, have, want string) {
		if cond {
			errs = append(errs, fmt.Errorf("%w: %s is set but %s is not", ErrInvalid, have, want))
		}
	}
	need(spec.orgName != "" && spec.orgID == "", EnvInitOrgName, EnvInitOrgID)
	need(spec.projectName != "" && spec.projectID == "", EnvInitProjectName, EnvInitProjectID)
	need(spec.projectID != "" && spec.orgID == "", EnvInitProjectID, EnvInitOrgID)
	need(spec.publicKey != "" && spec.secretKey == "", EnvInitPublicKey, EnvInitSecretKey)
	need(spec.secretKey != "" && spec.publicKey == "", EnvInitSecretKey, EnvInitPublicKey)
	need((spec.publicKey != "" || spec.secretKey != "") && spec.projectID == "", "an init key", EnvInitProjectID)
	need(spec.email != "" && spec.orgID == "", EnvInitUserEmail, EnvInitOrgID)
	need((spec.userName != "" || spec.password != "") && spec.email == "", "an init user name or password", EnvInitUserEmail)
	return errors.Join(errs...)
}

func (s *Store) initOrganization(ctx context.Context, spec initSpec) error {
	name := spec.orgName
	if name == "" {
		name = spec.orgID
	}
	_, err := s.CreateOrganization(ctx, spec.orgID, name)
	if errors.Is(err, ErrConflict) {
		// It exists; a deleted one is not brought back.
		_, err = s.GetOrganization(ctx, spec.orgID)
	}
	return err
}

func (s *Store) initProject(ctx context.Context, spec initSpec) error {
	check := func() (bool, error) {
		var org string
		var deleted sql.NullInt64
		err := s.conn().queryRow(ctx, `SELECT org_id, deleted_at FROM projects WHERE id = ?`, spec.projectID).Scan(&org, &deleted)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("look up project %q: %w", spec.projectID, err)
		case org != spec.orgID:
			return true, fmt.Errorf("%w: project %q belongs to another organization", ErrConflict, spec.projectID)
		case deleted.Valid:
			return true, fmt.Errorf("%w: project %q was deleted", ErrConflict, spec.projectID)
		}
		return true, nil
	}
	if exists, err := check(); exists || err != nil {
		return err
	}
	name := spec.projectName
	if name == "" {
		name = spec.projectID
	}
	_, err := s.CreateProject(ctx, spec.orgID, NewProject{ID: spec.projectID, Name: name, RetentionDays: spec.retentionDays})
	if errors.Is(err, ErrConflict) {
		// Another replica created it meanwhile, or the name is taken by a
		// different project; check tells which.
		if exists, checkErr := check(); exists || checkErr != nil {
			return checkErr
		}
	}
	return err
}

func (s *Store) initAPIKey(ctx context.Context, spec initSpec) error {
	check := func() (bool, error) {
		var hash, org string
		var project sql.NullString
		var revoked sql.NullInt64
		err := s.conn().queryRow(ctx, `SELECT secret_hash, org_id, project_id, revoked_at FROM api_keys WHERE public_key = ?`,
			spec.publicKey).Scan(&hash, &org, &project, &revoked)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("look up key %q: %w", spec.publicKey, err)
		case !s.hasher.Matches(spec.secretKey, hash):
			return true, fmt.Errorf("%w: key %q exists with a different secret", ErrConflict, spec.publicKey)
		case org != spec.orgID || project.String != spec.projectID:
			return true, fmt.Errorf("%w: key %q belongs to another project", ErrConflict, spec.publicKey)
		case revoked.Valid:
			return true, fmt.Errorf("%w: key %q was revoked", ErrConflict, spec.publicKey)
		}
		return true, nil
	}
	if exists, err := check(); exists || err != nil {
		return err
	}
	_, _, err := s.CreateAPIKey(ctx, spec.orgID, spec.projectID, NewAPIKey{
		Note: "created from " + EnvInitPublicKey, PublicKey: spec.publicKey, SecretKey: spec.secretKey,
	})
	if errors.Is(err, ErrConflict) {
		if exists, checkErr := check(); exists || checkErr != nil {
			return checkErr
		}
	}
	return err
}

// initUser creates the user when the email is unknown and makes them OWNER
// of the organization unless they are a member already.
func (s *Store) initUser(ctx context.Context, spec initSpec) error {
	user, err := s.GetUserByEmail(ctx, spec.email)
	if errors.Is(err, ErrNotFound) {
		user, err = s.CreateUser(ctx, NewUser{Email: spec.email, Name: spec.userName, Password: spec.password})
		if errors.Is(err, ErrConflict) {
			user, err = s.GetUserByEmail(ctx, spec.email)
		}
	}
	if err != nil {
		return err
	}
	now := s.micros()
	if _, err := s.conn().exec(ctx, `INSERT INTO organization_memberships (org_id, user_id, role, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (org_id, user_id) DO NOTHING`,
		spec.orgID, user.ID, string(RoleOwner), now, now); err != nil {
		return fmt.Errorf("add %q to %q: %w", spec.email, spec.orgID, classify(err))
	}
	return nil
}
