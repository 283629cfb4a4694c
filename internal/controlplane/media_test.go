package controlplane

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMedia(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		clock := &fakeClock{now: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)}
		s.now = clock.Now

		m, err := s.PutMedia(ctx, pa.ID, NewMedia{ID: "m1", SHA256: "hash", ContentType: "image/png", ContentLength: 10})
		require.NoError(t, err)
		assert.Equal(t, "image/png", m.ContentType)
		assert.True(t, m.UploadedAt.IsZero())

		clock.Advance(time.Second)
		m, err = s.PutMedia(ctx, pa.ID, NewMedia{ID: "m1", SHA256: "hash", ContentType: "image/jpeg", ContentLength: 12})
		require.NoError(t, err)
		assert.Equal(t, "image/jpeg", m.ContentType, "not uploaded yet: the new description wins")
		assert.Equal(t, int64(12), m.ContentLength)

		require.NoError(t, s.MarkMediaStored(ctx, pa.ID, "m1"))
		m, err = s.PutMedia(ctx, pa.ID, NewMedia{ID: "m1", SHA256: "hash", ContentType: "image/gif", ContentLength: 99})
		require.NoError(t, err)
		assert.Equal(t, "image/jpeg", m.ContentType, "uploaded media keeps its description")
		assert.Equal(t, clock.Now(), m.UploadedAt)

		require.NoError(t, s.ReportMediaUpload(ctx, pa.ID, "m1", MediaUploadReport{UploadHTTPStatus: 200, UploadTimeMs: 42}))
		got, err := s.GetMedia(ctx, pa.ID, "m1")
		require.NoError(t, err)
		assert.Equal(t, 200, got.UploadHTTPStatus)
		assert.Equal(t, int64(42), got.UploadTimeMs)

		// The same content in project b is b's own record.
		_, err = s.GetMedia(ctx, pb.ID, "m1")
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.MarkMediaStored(ctx, pb.ID, "m1"), ErrNotFound)
		assert.ErrorIs(t, s.ReportMediaUpload(ctx, pb.ID, "m1", MediaUploadReport{}), ErrNotFound)
		mb, err := s.PutMedia(ctx, pb.ID, NewMedia{ID: "m1", SHA256: "hash", ContentType: "image/gif", ContentLength: 99})
		require.NoError(t, err)
		assert.True(t, mb.UploadedAt.IsZero())

		for _, bad := range []NewMedia{{SHA256: "h", ContentType: "t", ContentLength: 1}, {ID: "x", SHA256: "h", ContentType: "t"}} {
			_, err := s.PutMedia(ctx, pa.ID, bad)
			assert.ErrorIs(t, err, ErrInvalid)
		}
	})
}

func TestSecret(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		got := make([][]byte, 4)
		for i := range got {
			wg.Go(func() {
				v, err := s.Secret(ctx, "media-urls")
				assert.NoError(t, err)
				got[i] = v
			})
		}
		wg.Wait()
		assert.Len(t, got[0], secretBytes)
		for _, v := range got[1:] {
			assert.Equal(t, got[0], v, "concurrent first uses agree on one secret")
		}
		other, err := s.Secret(ctx, "other")
		require.NoError(t, err)
		assert.NotEqual(t, got[0], other)
	})
}
