package controlplane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

// VerifyPublicKey looks a key up by its public key alone, for
// `Authorization: Bearer <publicKey>`. Public keys are not secret (browsers
// send them), so callers must grant such a request no more than the scores
// scope. Unknown and revoked keys yield apikey.ErrInvalidCredentials;
// database failures are returned as they are, as Verify does.
func (s *Store) VerifyPublicKey(ctx context.Context, publicKey string) (apikey.Principal, error) {
	var (
		id, scope, org    string
		project           sql.NullString
		lastUsed, revoked sql.NullInt64
	)
	err := s.conn().queryRow(ctx, `SELECT id, scope, org_id, project_id, last_used_at, revoked_at
		FROM api_keys WHERE public_key = ?`, publicKey).
		Scan(&id, &scope, &org, &project, &lastUsed, &revoked)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && revoked.Valid) {
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	if err != nil {
		return apikey.Principal{}, fmt.Errorf("verify public key: %w", err)
	}
	s.touch(ctx, id, publicKey, lastUsed)
	return apikey.Principal{
		PublicKey:      publicKey,
		ProjectID:      project.String,
		OrganizationID: org,
		Scope:          apikey.Scope(scope),
	}, nil
}
