package controlplane

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestComments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		first, err := s.CreateComment(ctx, pa.ID, NewComment{ObjectType: ObjectTrace, ObjectID: "t-1", Content: "  looks wrong  ", AuthorUserID: "u-1"})
		require.NoError(t, err)
		assert.Equal(t, "looks wrong", first.Content, "trimmed")
		_, err = s.CreateComment(ctx, pa.ID, NewComment{ObjectType: ObjectTrace, ObjectID: "t-1", Content: "agreed", AuthorUserID: "u-2"})
		require.NoError(t, err)
		_, err = s.CreateComment(ctx, pa.ID, NewComment{ObjectType: ObjectSession, ObjectID: "t-1", Content: "a session", AuthorUserID: "u-1"})
		require.NoError(t, err)

		for _, bad := range []NewComment{
			{ObjectType: "DATASET", ObjectID: "x", Content: "c"},
			{ObjectType: ObjectTrace, Content: "c"},
			{ObjectType: ObjectTrace, ObjectID: "x", Content: "   "},
			{ObjectType: ObjectTrace, ObjectID: "x", Content: strings.Repeat("é", MaxCommentLength+1)},
		} {
			_, err := s.CreateComment(ctx, pa.ID, bad)
			assert.ErrorIs(t, err, ErrInvalid, "%+v", bad)
		}
		_, err = s.CreateComment(ctx, pa.ID, NewComment{ObjectType: ObjectTrace, ObjectID: "x", Content: strings.Repeat("é", MaxCommentLength)})
		assert.NoError(t, err, "the limit counts characters, not bytes")

		list, total, err := s.ListComments(ctx, pa.ID, CommentFilter{ObjectType: ObjectTrace, ObjectID: "t-1", Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, 2, total)
		assert.Equal(t, []string{"looks wrong", "agreed"}, []string{list[0].Content, list[1].Content}, "oldest first")
		_, total, err = s.ListComments(ctx, pa.ID, CommentFilter{AuthorUserID: "u-1", Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, 2, total)
		_, total, err = s.ListComments(ctx, pb.ID, CommentFilter{Limit: 10})
		require.NoError(t, err)
		assert.Zero(t, total, "another project sees none")
		_, err = s.GetComment(ctx, pb.ID, first.ID)
		assert.ErrorIs(t, err, ErrNotFound)

		assert.ErrorIs(t, s.DeleteComment(ctx, pa.ID, first.ID, "u-2"), ErrNotFound, "only its author deletes it")
		assert.ErrorIs(t, s.DeleteComment(ctx, pb.ID, first.ID, ""), ErrNotFound)
		require.NoError(t, s.DeleteComment(ctx, pa.ID, first.ID, "u-1"))
		_, err = s.GetComment(ctx, pa.ID, first.ID)
		assert.ErrorIs(t, err, ErrNotFound)
	})
}
