package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

func TestDatasetUpsert(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		d, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "eval/qa", Description: ptr("questions"),
			Metadata: json.RawMessage(` {"owner": "x"} `)})
		require.NoError(t, err)
		assert.Equal(t, "eval/qa", d.Name)
		assert.Equal(t, "questions", d.Description)
		assert.Equal(t, `{"owner":"x"}`, string(d.Metadata))
		assert.Nil(t, d.InputSchema)

		again, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "eval/qa", InputSchema: json.RawMessage(`{"type":"object"}`)})
		require.NoError(t, err)
		assert.Equal(t, d.ID, again.ID, "upsert by name")
		assert.Equal(t, "questions", again.Description, "omitted fields are kept")
		assert.Equal(t, `{"owner":"x"}`, string(again.Metadata))
		assert.Equal(t, `{"type":"object"}`, string(again.InputSchema))

		cleared, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "eval/qa", Metadata: json.RawMessage(`null`),
			InputSchema: json.RawMessage(`null`)})
		require.NoError(t, err)
		assert.Nil(t, cleared.Metadata, "null clears")
		assert.Nil(t, cleared.InputSchema)

		got, err := s.GetDataset(ctx, pa.ID, "eval/qa")
		require.NoError(t, err)
		assert.Equal(t, cleared, got)
		got, err = s.GetDatasetByID(ctx, pa.ID, d.ID)
		require.NoError(t, err)
		assert.Equal(t, "eval/qa", got.Name)

		_, err = s.GetDataset(ctx, pb.ID, "eval/qa")
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.GetDatasetByID(ctx, pb.ID, d.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		other, err := s.UpsertDataset(ctx, pb.ID, DatasetUpsert{Name: "eval/qa"})
		require.NoError(t, err)
		assert.NotEqual(t, d.ID, other.ID, "the same name in another project is another dataset")

		for name, u := range map[string]DatasetUpsert{
			"empty name":     {Name: ""},
			"spaces":         {Name: " x"},
			"empty folder":   {Name: "a//b"},
			"bad metadata":   {Name: "x", Metadata: json.RawMessage(`{`)},
			"bad schema":     {Name: "x", InputSchema: json.RawMessage(`{"type": 12}`)},
			"schema not obj": {Name: "x", ExpectedOutputSchema: json.RawMessage(`"string"`)},
			"remote ref":     {Name: "x", InputSchema: json.RawMessage(`{"$ref": "file:///etc/passwd"}`)},
		} {
			_, err := s.UpsertDataset(ctx, pa.ID, u)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}
	})
}

func TestListDatasets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
		s.now = clock.Now
		for i := range 3 {
			clock.Advance(time.Second)
			_, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: fmt.Sprint("d", i)})
			require.NoError(t, err)
		}
		_, err := s.UpsertDataset(ctx, pb.ID, DatasetUpsert{Name: "other"})
		require.NoError(t, err)
		list, total, err := s.ListDatasets(ctx, pa.ID, 0, 2)
		require.NoError(t, err)
		assert.Equal(t, 3, total)
		require.Len(t, list, 2)
		assert.Equal(t, []string{"d2", "d1"}, []string{list[0].Name, list[1].Name}, "newest first")
		list, _, err = s.ListDatasets(ctx, pa.ID, 2, 2)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, "d0", list[0].Name)
	})
}

func TestDatasetItems(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		_, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "qa"})
		require.NoError(t, err)
		_, err = s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "other"})
		require.NoError(t, err)

		item, err := s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", ID: "item-1",
			Input: json.RawMessage(`{"q": "2+2"}`), ExpectedOutput: json.RawMessage(`"4"`), Metadata: json.RawMessage(`{"k":1}`),
			SourceTraceID: ptr("trace-1")})
		require.NoError(t, err)
		assert.Equal(t, ItemActive, item.Status)
		assert.Equal(t, "qa", item.DatasetName)
		assert.Equal(t, `{"q":"2+2"}`, string(item.Input))
		assert.Equal(t, "trace-1", item.SourceTraceID)

		up, err := s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", ID: "item-1",
			ExpectedOutput: json.RawMessage(`"four"`), Metadata: json.RawMessage(`null`)})
		require.NoError(t, err)
		assert.Equal(t, `{"q":"2+2"}`, string(up.Input), "omitted input is kept")
		assert.Equal(t, `"four"`, string(up.ExpectedOutput))
		assert.Nil(t, up.Metadata)
		assert.Equal(t, "trace-1", up.SourceTraceID)
		assert.Equal(t, item.CreatedAt, up.CreatedAt)

		gen, err := s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", Input: json.RawMessage(`"x"`)})
		require.NoError(t, err)
		assert.NotEmpty(t, gen.ID, "ids are generated when not given")

		_, err = s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "other", ID: "item-1"})
		assert.ErrorIs(t, err, ErrConflict, "ids are unique across a project's datasets")
		_, err = s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "missing", ID: "x"})
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", Status: "DONE"})
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", Input: json.RawMessage(`{`)})
		assert.ErrorIs(t, err, ErrInvalid)

		// Another project neither sees nor changes the item; its own id space is separate.
		_, err = s.GetDatasetItem(ctx, pb.ID, "item-1")
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeleteDatasetItem(ctx, pb.ID, "item-1"), ErrNotFound)
		_, err = s.UpsertDatasetItem(ctx, pb.ID, DatasetItemUpsert{DatasetName: "qa", ID: "item-1"})
		assert.ErrorIs(t, err, ErrNotFound, "b has no dataset qa")

		// Archived items are listed no more but can still be read.
		_, err = s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", ID: gen.ID, Status: ItemArchived})
		require.NoError(t, err)
		list, total, err := s.ListDatasetItems(ctx, pa.ID, DatasetItemFilter{DatasetName: "qa", Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		require.Len(t, list, 1)
		assert.Equal(t, "item-1", list[0].ID)
		archived, err := s.GetDatasetItem(ctx, pa.ID, gen.ID)
		require.NoError(t, err)
		assert.Equal(t, ItemArchived, archived.Status)

		list, _, err = s.ListDatasetItems(ctx, pa.ID, DatasetItemFilter{SourceTraceID: "trace-1", Limit: 10})
		require.NoError(t, err)
		assert.Len(t, list, 1)
		list, _, err = s.ListDatasetItems(ctx, pa.ID, DatasetItemFilter{SourceObservationID: "nope", Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, list)
		_, _, err = s.ListDatasetItems(ctx, pa.ID, DatasetItemFilter{DatasetName: "missing", Limit: 10})
		assert.ErrorIs(t, err, ErrNotFound)
		list, _, err = s.ListDatasetItems(ctx, pb.ID, DatasetItemFilter{Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, list)

		require.NoError(t, s.DeleteDatasetItem(ctx, pa.ID, "item-1"))
		assert.ErrorIs(t, s.DeleteDatasetItem(ctx, pa.ID, "item-1"), ErrNotFound)
	})
}

func TestDatasetItemPagination(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		_, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "qa"})
		require.NoError(t, err)
		clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
		s.now = clock.Now
		for i := range 5 {
			clock.Advance(time.Second)
			_, err := s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", ID: fmt.Sprint("i", i)})
			require.NoError(t, err)
		}
		var seen []string
		for offset := 0; offset < 5; offset += 2 {
			list, total, err := s.ListDatasetItems(ctx, pa.ID, DatasetItemFilter{DatasetName: "qa", Offset: offset, Limit: 2})
			require.NoError(t, err)
			assert.Equal(t, 5, total)
			for _, it := range list {
				seen = append(seen, it.ID)
			}
		}
		assert.Equal(t, []string{"i0", "i1", "i2", "i3", "i4"}, seen)
	})
}

func TestDatasetSchemas(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		_, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "typed",
			InputSchema: json.RawMessage(`{"type":"object","required":["question"],
				"properties":{"question":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}}}`),
			ExpectedOutputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"string","minLength":1}`)})
		require.NoError(t, err)

		_, err = s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "typed", ID: "ok",
			Input: json.RawMessage(`{"question":"why?","tags":["a"]}`), ExpectedOutput: json.RawMessage(`"because"`)})
		require.NoError(t, err)

		for want, u := range map[string]DatasetItemUpsert{
			"input/tags/1":   {Input: json.RawMessage(`{"question":"q","tags":["a",2]}`)},
			"input:":         {Input: json.RawMessage(`{"tags":[]}`)},
			"expectedOutput": {Input: json.RawMessage(`{"question":"q"}`), ExpectedOutput: json.RawMessage(`""`)},
		} {
			u.DatasetName, u.ID = "typed", "bad"
			_, err := s.UpsertDatasetItem(ctx, pa.ID, u)
			require.ErrorIs(t, err, ErrInvalid, want)
			assert.Contains(t, err.Error(), want)
		}
		// A merged update is checked too: the kept input must still match.
		_, err = s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "typed", ID: "ok", ExpectedOutput: json.RawMessage(`7`)})
		assert.ErrorIs(t, err, ErrInvalid)

		// A schema that an existing item breaks is refused and names the item.
		_, err = s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "typed", InputSchema: json.RawMessage(`{"type":"string"}`)})
		require.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), `"ok"`)
		d, err := s.GetDataset(ctx, pa.ID, "typed")
		require.NoError(t, err)
		assert.Contains(t, string(d.InputSchema), "question", "the old schema stays")
	})
}

func TestDatasetRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		d, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "qa"})
		require.NoError(t, err)
		for _, id := range []string{"i1", "i2", "archived"} {
			_, err := s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", ID: id})
			require.NoError(t, err)
		}
		_, err = s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", ID: "archived", Status: ItemArchived})
		require.NoError(t, err)

		ri, err := s.CreateDatasetRunItem(ctx, pa.ID, NewDatasetRunItem{RunName: "exp-1", RunDescription: "first",
			Metadata: json.RawMessage(`{"model":"m"}`), DatasetItemID: "i1", TraceID: "t1", ObservationID: "o1"})
		require.NoError(t, err)
		assert.Equal(t, "exp-1", ri.DatasetRunName)
		assert.Equal(t, "t1", ri.TraceID)
		assert.Equal(t, "o1", ri.ObservationID)
		ri2, err := s.CreateDatasetRunItem(ctx, pa.ID, NewDatasetRunItem{RunName: "exp-1", RunDescription: "ignored",
			DatasetItemID: "i2", TraceID: "t2"})
		require.NoError(t, err)
		assert.Equal(t, ri.DatasetRunID, ri2.DatasetRunID, "the run is created once")

		run, err := s.GetDatasetRun(ctx, pa.ID, "qa", "exp-1")
		require.NoError(t, err)
		assert.Equal(t, "first", run.Description)
		assert.Equal(t, `{"model":"m"}`, string(run.Metadata))
		assert.Equal(t, d.ID, run.DatasetID)
		assert.Equal(t, "qa", run.DatasetName)

		// A newer link for the same item replaces the older one.
		ri3, err := s.CreateDatasetRunItem(ctx, pa.ID, NewDatasetRunItem{RunName: "exp-1", DatasetItemID: "i1", TraceID: "t1b"})
		require.NoError(t, err)
		items, total, err := s.ListDatasetRunItems(ctx, pa.ID, DatasetRunItemFilter{DatasetID: d.ID, RunName: "exp-1", Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, 2, total)
		require.Len(t, items, 2)
		assert.Equal(t, []string{"t2", "t1b"}, []string{items[0].TraceID, items[1].TraceID})
		assert.Equal(t, ri3.ID, items[1].ID)
		byID, _, err := s.ListDatasetRunItems(ctx, pa.ID, DatasetRunItemFilter{RunID: run.ID, Limit: 1, Offset: 1})
		require.NoError(t, err)
		require.Len(t, byID, 1)
		assert.Equal(t, ri3.ID, byID[0].ID)

		for name, n := range map[string]NewDatasetRunItem{
			"archived item": {RunName: "exp-1", DatasetItemID: "archived", TraceID: "t"},
			"missing item":  {RunName: "exp-1", DatasetItemID: "ghost", TraceID: "t"},
		} {
			_, err := s.CreateDatasetRunItem(ctx, pa.ID, n)
			assert.ErrorIs(t, err, ErrNotFound, name)
		}
		for name, n := range map[string]NewDatasetRunItem{
			"no run name": {DatasetItemID: "i1", TraceID: "t"},
			"no trace":    {RunName: "exp-1", DatasetItemID: "i1"},
			"bad meta":    {RunName: "exp-2", DatasetItemID: "i1", TraceID: "t", Metadata: json.RawMessage(`{`)},
		} {
			_, err := s.CreateDatasetRunItem(ctx, pa.ID, n)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}

		_, err = s.CreateDatasetRunItem(ctx, pa.ID, NewDatasetRunItem{RunName: "exp-2", DatasetItemID: "i2", TraceID: "t"})
		require.NoError(t, err)
		runs, total, err := s.ListDatasetRuns(ctx, pa.ID, "qa", 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 2, total)
		require.Len(t, runs, 2)

		// Project b sees none of it and cannot delete it.
		_, err = s.CreateDatasetRunItem(ctx, pb.ID, NewDatasetRunItem{RunName: "exp-1", DatasetItemID: "i1", TraceID: "t"})
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.GetDatasetRun(ctx, pb.ID, "qa", "exp-1")
		assert.ErrorIs(t, err, ErrNotFound)
		_, _, err = s.ListDatasetRuns(ctx, pb.ID, "qa", 0, 10)
		assert.ErrorIs(t, err, ErrNotFound)
		_, _, err = s.ListDatasetRunItems(ctx, pb.ID, DatasetRunItemFilter{DatasetID: d.ID, RunName: "exp-1", Limit: 10})
		assert.ErrorIs(t, err, ErrNotFound)
		items, _, err = s.ListDatasetRunItems(ctx, pb.ID, DatasetRunItemFilter{RunID: run.ID, Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, items, "a run id of another project selects nothing")
		assert.ErrorIs(t, s.DeleteDatasetRun(ctx, pb.ID, "qa", "exp-1"), ErrNotFound)

		require.NoError(t, s.DeleteDatasetRun(ctx, pa.ID, "qa", "exp-1"))
		_, err = s.GetDatasetRun(ctx, pa.ID, "qa", "exp-1")
		assert.ErrorIs(t, err, ErrNotFound)
		items, _, err = s.ListDatasetRunItems(ctx, pa.ID, DatasetRunItemFilter{RunID: run.ID, Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, items, "run items go with their run")
		assert.ErrorIs(t, s.DeleteDatasetRun(ctx, pa.ID, "qa", "exp-1"), ErrNotFound)
	})
}

// TestDatasetRunFirstUseRace creates items of one new run concurrently:
// exactly one run exists afterwards and holds every item.
func TestDatasetRunFirstUseRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		d, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "qa"})
		require.NoError(t, err)
		const n = 8
		for i := range n {
			_, err := s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", ID: fmt.Sprint("i", i)})
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				_, err := s.CreateDatasetRunItem(ctx, pa.ID, NewDatasetRunItem{RunName: "race", DatasetItemID: fmt.Sprint("i", i), TraceID: "t"})
				errs <- err
			})
		}
		wg.Wait()
		for range n {
			require.NoError(t, <-errs)
		}
		runs, total, err := s.ListDatasetRuns(ctx, pa.ID, "qa", 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		require.Len(t, runs, 1)
		_, items, err := s.ListDatasetRunItems(ctx, pa.ID, DatasetRunItemFilter{DatasetID: d.ID, RunName: "race", Limit: 100})
		require.NoError(t, err)
		assert.Equal(t, n, items)
	})
}

// Items read as of a time, and run items pinned to a dataset version, on
// both databases.
func TestDatasetItemVersions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		_, err := s.UpsertDataset(ctx, pa.ID, DatasetUpsert{Name: "qa"})
		require.NoError(t, err)
		tick := func() time.Time {
			time.Sleep(2 * time.Millisecond)
			now := time.Now()
			time.Sleep(2 * time.Millisecond)
			return now
		}
		upsert := func(id, input string) {
			_, err := s.UpsertDatasetItem(ctx, pa.ID, DatasetItemUpsert{DatasetName: "qa", ID: id, Input: json.RawMessage(input)})
			require.NoError(t, err)
		}
		asOf := func(at time.Time) map[string]string {
			items, total, err := s.ListDatasetItems(ctx, pa.ID, DatasetItemFilter{DatasetName: "qa", AsOf: at, Limit: 10})
			require.NoError(t, err)
			out := map[string]string{}
			for _, it := range items {
				out[it.ID] = string(it.Input)
				assert.Equal(t, "qa", it.DatasetName)
			}
			assert.Equal(t, len(items), total)
			return out
		}
		before := tick()
		upsert("a", `"a1"`)
		upsert("b", `"b1"`)
		first := tick()
		upsert("a", `"a2"`)
		require.NoError(t, s.DeleteDatasetItem(ctx, pa.ID, "b"))
		second := tick()

		assert.Empty(t, asOf(before))
		assert.Equal(t, map[string]string{"a": `"a1"`, "b": `"b1"`}, asOf(first))
		assert.Equal(t, map[string]string{"a": `"a2"`}, asOf(second))
		_, _, err = s.ListDatasetItems(ctx, pa.ID, DatasetItemFilter{AsOf: first})
		assert.ErrorIs(t, err, ErrInvalid, "a point-in-time read names its dataset")

		created := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
		ri, err := s.CreateDatasetRunItem(ctx, pa.ID, NewDatasetRunItem{RunName: "r", DatasetItemID: "a", TraceID: "t",
			CreatedAt: created, DatasetVersion: first})
		require.NoError(t, err)
		assert.Equal(t, created, ri.CreatedAt.UTC())
		_, err = s.CreateDatasetRunItem(ctx, pa.ID, NewDatasetRunItem{RunName: "r", DatasetItemID: "a", TraceID: "t", DatasetVersion: before})
		assert.ErrorIs(t, err, ErrInvalid, "the item did not exist at that version")
	})
}
