package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/glassbox-dev/glassbox/internal/itemschema"
	"github.com/google/uuid"
)

// Dataset item statuses: archived items are kept but no longer listed or
// used in new runs.
const (
	ItemActive   = "ACTIVE"
	ItemArchived = "ARCHIVED"
)

const maxItemID = 255

// Dataset is a named collection of items that experiments run over.
type Dataset struct {
	ID          string
	ProjectID   string
	Name        string
	Description string
	Metadata    json.RawMessage // any JSON value; nil when none
	// InputSchema and ExpectedOutputSchema are JSON Schemas that item inputs
	// and expected outputs must match; nil when none.
	InputSchema          json.RawMessage
	ExpectedOutputSchema json.RawMessage
	CreatedAt            time.Time
	UpdatedAt            time.Time
}

// DatasetUpsert creates the named dataset or changes the fields that are
// set. For the JSON fields nil keeps the stored value and JSON null clears it.
type DatasetUpsert struct {
	Name                 string
	Description          *string
	Metadata             json.RawMessage
	InputSchema          json.RawMessage
	ExpectedOutputSchema json.RawMessage
}

const datasetColumns = `id, project_id, name, description, metadata, input_schema, expected_output_schema, created_at, updated_at`

// UpsertDataset creates a dataset or updates the one with the same name.
// A new schema must be valid and match every item already in the dataset.
func (s *Store) UpsertDataset(ctx context.Context, projectID string, u DatasetUpsert) (Dataset, error) {
	name, err := checkName("dataset", u.Name)
	if err != nil {
		return Dataset{}, err
	}
	if name != u.Name || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		return Dataset{}, fmt.Errorf("%w: name %q: no surrounding spaces; folders are separated by single '/'", ErrInvalid, u.Name)
	}
	fields := map[string]*json.RawMessage{"metadata": &u.Metadata, "inputSchema": &u.InputSchema, "expectedOutputSchema": &u.ExpectedOutputSchema}
	for field, raw := range fields {
		if *raw == nil || isNullJSON(*raw) {
			continue
		}
		if *raw, err = normalizeJSON(*raw, "null", field); err != nil {
			return Dataset{}, err
		}
	}
	for field, raw := range map[string]json.RawMessage{"inputSchema": u.InputSchema, "expectedOutputSchema": u.ExpectedOutputSchema} {
		if raw != nil && !isNullJSON(raw) {
			if _, err := itemschema.Compile(field, raw); err != nil {
				return Dataset{}, fmt.Errorf("%w: %w", ErrInvalid, err)
			}
		}
	}
	var d Dataset
	err = s.inTx(ctx, func(c conn) error {
		current, err := getDataset(ctx, c, `project_id = ? AND name = ?`, projectID, name)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if !exists {
			current = Dataset{ID: uuid.NewString(), ProjectID: projectID, Name: name}
		}
		if u.Description != nil {
			current.Description = *u.Description
		}
		current.Metadata = updateJSON(current.Metadata, u.Metadata)
		current.InputSchema = updateJSON(current.InputSchema, u.InputSchema)
		current.ExpectedOutputSchema = updateJSON(current.ExpectedOutputSchema, u.ExpectedOutputSchema)
		now := s.micros()
		if exists {
			if u.InputSchema != nil || u.ExpectedOutputSchema != nil {
				if err := checkItemsMatch(ctx, c, current); err != nil {
					return err
				}
			}
			_, err = c.exec(ctx, `UPDATE datasets SET description = ?, metadata = ?, input_schema = ?, expected_output_schema = ?,
				updated_at = ? WHERE project_id = ? AND id = ?`,
				current.Description, nullJSON(current.Metadata), nullJSON(current.InputSchema), nullJSON(current.ExpectedOutputSchema),
				now, projectID, current.ID)
		} else {
			_, err = c.exec(ctx, `INSERT INTO datasets (`+datasetColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				current.ID, projectID, name, current.Description, nullJSON(current.Metadata), nullJSON(current.InputSchema),
				nullJSON(current.ExpectedOutputSchema), now, now)
		}
		if err != nil {
			return fmt.Errorf("upsert dataset %q: %w", name, classify(err))
		}
		d, err = getDataset(ctx, c, `project_id = ? AND id = ?`, projectID, current.ID)
		return err
	})
	return d, err
}

// updateJSON applies the nil-keeps, null-clears rule.
func updateJSON(current, update json.RawMessage) json.RawMessage {
	switch {
	case update == nil:
		return current
	case isNullJSON(update):
		return nil
	}
	return update
}

func nullJSON(raw json.RawMessage) sql.NullString {
	if raw == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(raw), Valid: true}
}

func rawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// GetDataset returns the named dataset of the project.
func (s *Store) GetDataset(ctx context.Context, projectID, name string) (Dataset, error) {
	return getDataset(ctx, s.conn(), `project_id = ? AND name = ?`, projectID, name)
}

// GetDatasetByID returns a dataset of the project by id.
func (s *Store) GetDatasetByID(ctx context.Context, projectID, id string) (Dataset, error) {
	return getDataset(ctx, s.conn(), `project_id = ? AND id = ?`, projectID, id)
}

func getDataset(ctx context.Context, c conn, where string, args ...any) (Dataset, error) {
	d, err := scanDataset(c.queryRow(ctx, `SELECT `+datasetColumns+` FROM datasets WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return Dataset{}, fmt.Errorf("dataset %v: %w", args[len(args)-1], ErrNotFound)
	}
	if err != nil {
		return Dataset{}, fmt.Errorf("get dataset: %w", err)
	}
	return d, nil
}

func scanDataset(r scanner) (Dataset, error) {
	var (
		d                         Dataset
		metadata, input, expected sql.NullString
		createdAt, updatedAt      int64
	)
	if err := r.Scan(&d.ID, &d.ProjectID, &d.Name, &d.Description, &metadata, &input, &expected, &createdAt, &updatedAt); err != nil {
		return Dataset{}, err
	}
	d.Metadata, d.InputSchema, d.ExpectedOutputSchema = rawJSON(metadata), rawJSON(input), rawJSON(expected)
	d.CreatedAt, d.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return d, nil
}

// ListDatasets returns one page of the project's datasets, newest first, and
// the number of datasets.
func (s *Store) ListDatasets(ctx context.Context, projectID string, offset, limit int) ([]Dataset, int, error) {
	return projectPage(ctx, s.conn(), "datasets", "datasets", datasetColumns, "created_at DESC, id", projectID, offset, limit, scanDataset)
}

// DatasetItem is one example of a dataset: an input and the output expected for it.
type DatasetItem struct {
	ID          string
	ProjectID   string
	DatasetID   string
	DatasetName string
	Status      string
	// Input, ExpectedOutput and Metadata are any JSON value; nil when none.
	Input               json.RawMessage
	ExpectedOutput      json.RawMessage
	Metadata            json.RawMessage
	SourceTraceID       string
	SourceObservationID string
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// DatasetItemUpsert creates an item or changes an existing one with the same
// id. For the JSON fields nil keeps the stored value and JSON null clears it;
// nil pointers and an empty status keep theirs too.
type DatasetItemUpsert struct {
	DatasetName         string
	ID                  string // generated when empty
	Input               json.RawMessage
	ExpectedOutput      json.RawMessage
	Metadata            json.RawMessage
	SourceTraceID       *string
	SourceObservationID *string
	Status              string // ItemActive (default for new items) or ItemArchived
}

const itemColumns = `i.id, i.project_id, i.dataset_id, d.name, i.status, i.input, i.expected_output, i.metadata,
	i.source_trace_id, i.source_observation_id, i.created_at, i.updated_at`

// UpsertDatasetItem creates or updates an item. Ids are unique within the
// project: an id of another dataset's item is a conflict. The merged item
// must match the dataset's schemas.
func (s *Store) UpsertDatasetItem(ctx context.Context, projectID string, u DatasetItemUpsert) (DatasetItem, error) {
	if u.ID == "" {
		u.ID = uuid.NewString()
	}
	if err := checkItemID(u.ID); err != nil {
		return DatasetItem{}, err
	}
	if u.Status != "" && u.Status != ItemActive && u.Status != ItemArchived {
		return DatasetItem{}, fmt.Errorf("%w: status %q must be %s or %s", ErrInvalid, u.Status, ItemActive, ItemArchived)
	}
	fields := map[string]*json.RawMessage{"input": &u.Input, "expectedOutput": &u.ExpectedOutput, "metadata": &u.Metadata}
	for field, raw := range fields {
		if *raw == nil || isNullJSON(*raw) {
			continue
		}
		var err error
		if *raw, err = normalizeJSON(*raw, "null", field); err != nil {
			return DatasetItem{}, err
		}
	}
	var item DatasetItem
	err := s.inTx(ctx, func(c conn) error {
		d, err := getDataset(ctx, c, `project_id = ? AND name = ?`, projectID, u.DatasetName)
		if err != nil {
			return err
		}
		current, err := getItem(ctx, c, projectID, u.ID)
		exists := err == nil
		switch {
		case err != nil && !errors.Is(err, ErrNotFound):
			return err
		case exists && current.DatasetID != d.ID:
			return fmt.Errorf("%w: dataset item %q belongs to dataset %q, not %q", ErrConflict, u.ID, current.DatasetName, d.Name)
		case !exists:
			current = DatasetItem{ID: u.ID, ProjectID: projectID, DatasetID: d.ID, DatasetName: d.Name, Status: ItemActive}
		}
		current.Input = updateJSON(current.Input, u.Input)
		current.ExpectedOutput = updateJSON(current.ExpectedOutput, u.ExpectedOutput)
		current.Metadata = updateJSON(current.Metadata, u.Metadata)
		if u.SourceTraceID != nil {
			current.SourceTraceID = *u.SourceTraceID
		}
		if u.SourceObservationID != nil {
			current.SourceObservationID = *u.SourceObservationID
		}
		if u.Status != "" {
			current.Status = u.Status
		}
		if err := itemMatches(d, current); err != nil {
			return err
		}
		now := s.micros()
		if exists {
			_, err = c.exec(ctx, `UPDATE dataset_items SET status = ?, input = ?, expected_output = ?, metadata = ?,
				source_trace_id = ?, source_observation_id = ?, updated_at = ? WHERE project_id = ? AND id = ?`,
				current.Status, nullJSON(current.Input), nullJSON(current.ExpectedOutput), nullJSON(current.Metadata),
				current.SourceTraceID, current.SourceObservationID, now, projectID, current.ID)
		} else {
			_, err = c.exec(ctx, `INSERT INTO dataset_items (id, project_id, dataset_id, status, input, expected_output, metadata,
				source_trace_id, source_observation_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				current.ID, projectID, d.ID, current.Status, nullJSON(current.Input), nullJSON(current.ExpectedOutput),
				nullJSON(current.Metadata), current.SourceTraceID, current.SourceObservationID, now, now)
		}
		if err != nil {
			return fmt.Errorf("upsert dataset item %q: %w", current.ID, classify(err))
		}
		if item, err = getItem(ctx, c, projectID, current.ID); err != nil {
			return err
		}
		return recordItemVersion(ctx, c, item, now, false)
	})
	return item, err
}

// recordItemVersion appends the item's state from at on; two changes in the
// same microsecond keep the later.
func recordItemVersion(ctx context.Context, c conn, it DatasetItem, at int64, deleted bool) error {
	_, err := c.exec(ctx, `INSERT INTO dataset_item_versions (project_id, item_id, valid_from, dataset_id, status, input,
		expected_output, metadata, source_trace_id, source_observation_id, created_at, deleted)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (project_id, item_id, valid_from) DO UPDATE SET dataset_id = excluded.dataset_id, status = excluded.status,
			input = excluded.input, expected_output = excluded.expected_output, metadata = excluded.metadata,
			source_trace_id = excluded.source_trace_id, source_observation_id = excluded.source_observation_id,
			created_at = excluded.created_at, deleted = excluded.deleted`,
		it.ProjectID, it.ID, at, it.DatasetID, it.Status, nullJSON(it.Input), nullJSON(it.ExpectedOutput), nullJSON(it.Metadata),
		it.SourceTraceID, it.SourceObservationID, it.CreatedAt.UnixMicro(), boolInt(deleted))
	if err != nil {
		return fmt.Errorf("record a version of dataset item %q: %w", it.ID, err)
	}
	return nil
}

func checkItemID(id string) error {
	if id == "" || len(id) > maxItemID {
		return fmt.Errorf("%w: id must be 1-%d characters", ErrInvalid, maxItemID)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: id must not contain control characters", ErrInvalid)
		}
	}
	return nil
}

// itemMatches checks an item's input and expected output against the
// dataset's schemas; absent values are not checked.
func itemMatches(d Dataset, item DatasetItem) error {
	for _, pair := range []struct {
		field         string
		schema, value json.RawMessage
	}{
		{"input", d.InputSchema, item.Input},
		{"expectedOutput", d.ExpectedOutputSchema, item.ExpectedOutput},
	} {
		if pair.schema == nil || pair.value == nil {
			continue
		}
		sch, err := itemschema.Compile(pair.field+"Schema", pair.schema)
		if err == nil {
			err = itemschema.Validate(sch, pair.field, pair.value)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	return nil
}

// checkItemsMatch refuses a schema change that an existing item violates.
func checkItemsMatch(ctx context.Context, c conn, d Dataset) error {
	rows, err := c.query(ctx, `SELECT `+itemColumns+` FROM dataset_items i JOIN datasets d ON d.id = i.dataset_id
		WHERE i.project_id = ? AND i.dataset_id = ? ORDER BY i.created_at, i.id`, d.ProjectID, d.ID)
	if err != nil {
		return fmt.Errorf("items of dataset %q: %w", d.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		item, err := scanItem(rows)
		if err != nil {
			return err
		}
		if err := itemMatches(d, item); err != nil {
			return fmt.Errorf("existing dataset item %q: %w", item.ID, err)
		}
	}
	return rows.Err()
}

// GetDatasetItem returns an item of the project, whatever its status.
func (s *Store) GetDatasetItem(ctx context.Context, projectID, id string) (DatasetItem, error) {
	return getItem(ctx, s.conn(), projectID, id)
}

func getItem(ctx context.Context, c conn, projectID, id string) (DatasetItem, error) {
	item, err := scanItem(c.queryRow(ctx, `SELECT `+itemColumns+` FROM dataset_items i JOIN datasets d ON d.id = i.dataset_id
		WHERE i.project_id = ? AND i.id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return DatasetItem{}, fmt.Errorf("dataset item %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return DatasetItem{}, fmt.Errorf("get dataset item %q: %w", id, err)
	}
	return item, nil
}

func scanItem(r scanner) (DatasetItem, error) {
	var (
		it                        DatasetItem
		input, expected, metadata sql.NullString
		createdAt, updatedAt      int64
	)
	if err := r.Scan(&it.ID, &it.ProjectID, &it.DatasetID, &it.DatasetName, &it.Status, &input, &expected, &metadata,
		&it.SourceTraceID, &it.SourceObservationID, &createdAt, &updatedAt); err != nil {
		return DatasetItem{}, err
	}
	it.Input, it.ExpectedOutput, it.Metadata = rawJSON(input), rawJSON(expected), rawJSON(metadata)
	it.CreatedAt, it.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return it, nil
}

// DatasetItemFilter selects active items for ListDatasetItems; zero fields do not filter.
type DatasetItemFilter struct {
	DatasetName         string
	SourceTraceID       string
	SourceObservationID string
	// AsOf, when set, reads the dataset's items as they were at that time
	// (DatasetName is required then).
	AsOf   time.Time
	Offset int
	Limit  int
}

// ListDatasetItems returns one page of the project's active items, oldest
// first, and the number that match. A dataset name that does not exist is
// ErrNotFound rather than an empty list.
func (s *Store) ListDatasetItems(ctx context.Context, projectID string, f DatasetItemFilter) ([]DatasetItem, int, error) {
	if !f.AsOf.IsZero() {
		return s.listItemsAsOf(ctx, projectID, f)
	}
	c := s.conn()
	conds := []string{"i.project_id = ?", "i.status = ?"}
	args := []any{projectID, ItemActive}
	if f.DatasetName != "" {
		d, err := getDataset(ctx, c, `project_id = ? AND name = ?`, projectID, f.DatasetName)
		if err != nil {
			return nil, 0, err
		}
		conds, args = append(conds, "i.dataset_id = ?"), append(args, d.ID)
	}
	if f.SourceTraceID != "" {
		conds, args = append(conds, "i.source_trace_id = ?"), append(args, f.SourceTraceID)
	}
	if f.SourceObservationID != "" {
		conds, args = append(conds, "i.source_observation_id = ?"), append(args, f.SourceObservationID)
	}
	where := strings.Join(conds, " AND ")
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM dataset_items i WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count dataset items: %w", err)
	}
	rows, err := c.query(ctx, `SELECT `+itemColumns+` FROM dataset_items i JOIN datasets d ON d.id = i.dataset_id
		WHERE `+where+` ORDER BY i.created_at, i.id LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list dataset items: %w", err)
	}
	defer rows.Close()
	out := []DatasetItem{}
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list dataset items: %w", err)
		}
		out = append(out, it)
	}
	return out, total, rows.Err()
}

// listItemsAsOf is ListDatasetItems over the item versions: each item's
// newest version at or before f.AsOf, if it was active and not deleted then.
func (s *Store) listItemsAsOf(ctx context.Context, projectID string, f DatasetItemFilter) ([]DatasetItem, int, error) {
	c := s.conn()
	if f.DatasetName == "" {
		return nil, 0, fmt.Errorf("%w: reading items as of a time needs the dataset name", ErrInvalid)
	}
	d, err := getDataset(ctx, c, `project_id = ? AND name = ?`, projectID, f.DatasetName)
	if err != nil {
		return nil, 0, err
	}
	conds := []string{"v.project_id = ?", "v.dataset_id = ?", "v.deleted = 0", "v.status = ?"}
	args := []any{projectID, d.ID, ItemActive}
	if f.SourceTraceID != "" {
		conds, args = append(conds, "v.source_trace_id = ?"), append(args, f.SourceTraceID)
	}
	if f.SourceObservationID != "" {
		conds, args = append(conds, "v.source_observation_id = ?"), append(args, f.SourceObservationID)
	}
	from := `FROM dataset_item_versions v JOIN (
			SELECT item_id, MAX(valid_from) AS valid_from FROM dataset_item_versions
			WHERE project_id = ? AND dataset_id = ? AND valid_from <= ? GROUP BY item_id
		) latest ON latest.item_id = v.item_id AND latest.valid_from = v.valid_from
		WHERE ` + strings.Join(conds, " AND ")
	args = append([]any{projectID, d.ID, f.AsOf.UnixMicro()}, args...)
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) `+from, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count dataset items as of %s: %w", f.AsOf, err)
	}
	rows, err := c.query(ctx, `SELECT v.item_id, v.project_id, v.dataset_id, v.dataset_id, v.status, v.input, v.expected_output, v.metadata,
		v.source_trace_id, v.source_observation_id, v.created_at, v.valid_from `+from+` ORDER BY v.created_at, v.item_id LIMIT ? OFFSET ?`,
		append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list dataset items as of %s: %w", f.AsOf, err)
	}
	defer rows.Close()
	out := []DatasetItem{}
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list dataset items as of %s: %w", f.AsOf, err)
		}
		it.DatasetName = d.Name
		out = append(out, it)
	}
	return out, total, rows.Err()
}

// DeleteDatasetItem deletes an item. Run items that used it stay, so past
// experiment results keep their item ids, and reads as of an earlier time
// still find it.
func (s *Store) DeleteDatasetItem(ctx context.Context, projectID, id string) error {
	return s.inTx(ctx, func(c conn) error {
		item, err := getItem(ctx, c, projectID, id)
		if err != nil {
			return err
		}
		if _, err := c.exec(ctx, `DELETE FROM dataset_items WHERE project_id = ? AND id = ?`, projectID, id); err != nil {
			return fmt.Errorf("delete dataset item %q: %w", id, err)
		}
		return recordItemVersion(ctx, c, item, s.micros(), true)
	})
}
