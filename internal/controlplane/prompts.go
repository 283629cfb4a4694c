package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

// Prompt types.
const (
	PromptText = promptcompose.TypeText
	PromptChat = "chat"
)

// Prompt labels with a fixed meaning: LabelLatest always sits on the highest
// version; LabelProduction is what a fetch without a selector returns.
const (
	LabelLatest     = "latest"
	LabelProduction = "production"
)

const (
	maxCommitMessage = 500
	maxPromptName    = 255
)

var (
	placeholderPattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*$`)
	// variablePattern finds {{name}} in prompt text, with optional spaces.
	variablePattern = regexp.MustCompile(`{{\s*([^{}]*?)\s*}}`)
	// reservedPromptNames are paths of the UI's prompt pages.
	reservedPromptNames = []string{"new", "metrics", "prompt-detail"}
)

// Prompt is one version of a named prompt.
type Prompt struct {
	ID        string
	ProjectID string
	Name      string
	Version   int
	Type      string // PromptText or PromptChat
	// Prompt is a JSON string (text) or an array of chat messages and
	// placeholders (chat).
	Prompt        json.RawMessage
	Config        json.RawMessage // any JSON value, `{}` when none was given
	Labels        []string        // sorted
	Tags          []string        // sorted; shared by all versions of the name
	CommitMessage string
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Graph is set by ResolvePrompt when the prompt referenced other prompts.
	Graph *promptcompose.Graph
}

// NewPrompt is the input of CreatePrompt.
type NewPrompt struct {
	Name string
	Type string // PromptText when empty
	// Prompt is a JSON string for text prompts; for chat prompts an array of
	// {role, content} messages and {type: "placeholder", name} entries.
	Prompt json.RawMessage
	Config json.RawMessage
	Labels []string
	// Tags replace the tags of every version of the name; nil keeps them.
	Tags          []string
	CommitMessage string
	CreatedBy     string
}

// PromptSelector picks one version: by Version when set, else by Label,
// else the production label.
type PromptSelector struct {
	Label   string
	Version int
}

func (sel PromptSelector) String() string {
	if sel.Version > 0 {
		return fmt.Sprintf("version %d", sel.Version)
	}
	return fmt.Sprintf("label '%s'", sel.label())
}

func (sel PromptSelector) label() string {
	if sel.Label == "" {
		return LabelProduction
	}
	return sel.Label
}

// ChatMessage is one entry of a chat prompt: a message, or a placeholder
// for messages the caller inserts at compile time.
type ChatMessage struct {
	Type    string `json:"type,omitempty"` // "placeholder" or empty for a message
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
	Name    string `json:"name,omitempty"`
}

const placeholderType = "placeholder"

// MarshalJSON writes a message as {role, content}, even with empty content,
// and a placeholder as {type, name}.
func (m ChatMessage) MarshalJSON() ([]byte, error) {
	if m.Type == placeholderType {
		return json.Marshal(struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}{m.Type, m.Name})
	}
	return json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{m.Role, m.Content})
}

// CreatePrompt stores a new version of the named prompt: one more than the
// highest existing version, 1 for a new name. The new version gets the
// `latest` label and any labels given, which leave the versions they were on.
func (s *Store) CreatePrompt(ctx context.Context, projectID string, np NewPrompt) (Prompt, error) {
	p, refs, err := s.checkNewPrompt(projectID, np)
	if err != nil {
		return Prompt{}, err
	}
	labels, err := checkLabels(np.Labels, true)
	if err != nil {
		return Prompt{}, err
	}
	tags, err := checkTags(np.Tags)
	if err != nil {
		return Prompt{}, err
	}
	err = s.inTx(ctx, func(c conn) error {
		if err := s.lockPrompt(ctx, c, projectID, p.Name); err != nil {
			return err
		}
		watch, err := s.watchPrompt(ctx, c, projectID, p.Name)
		if err != nil {
			return err
		}
		var latest sql.NullInt64
		var latestType sql.NullString
		err = c.queryRow(ctx, `SELECT version, type FROM prompts WHERE project_id = ? AND name = ?
			ORDER BY version DESC LIMIT 1`, projectID, p.Name).Scan(&latest, &latestType)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read latest version of prompt %q: %w", p.Name, err)
		}
		if latestType.Valid && latestType.String != p.Type {
			return fmt.Errorf("%w: type: previous versions of prompt %q are %s prompts, not %s", ErrInvalid, p.Name, latestType.String, p.Type)
		}
		p.Version = int(latest.Int64) + 1
		// The new version must resolve with the store as it is now; it is
		// stored with its tags, resolved on every fetch.
		resolved := p
		if _, err := s.resolveContent(ctx, c, projectID, &resolved); err != nil {
			return err
		}
		now := s.micros()
		if _, err := c.exec(ctx, `INSERT INTO prompts
			(id, project_id, name, version, type, prompt, config, commit_message, created_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, projectID, p.Name, p.Version, p.Type, string(p.Prompt), string(p.Config), p.CommitMessage, p.CreatedBy,
			now, now); err != nil {
			return fmt.Errorf("create prompt %q: %w", p.Name, classify(err))
		}
		for _, r := range refs {
			if _, err := c.exec(ctx, `INSERT INTO prompt_dependencies (parent_id, project_id, child_name, child_label, child_version)
				VALUES (?, ?, ?, ?, ?)`, p.ID, projectID, r.Name, nullString(r.Label),
				sql.NullInt64{Int64: int64(r.Version), Valid: r.Version > 0}); err != nil {
				return fmt.Errorf("record dependency of prompt %q: %w", p.Name, err)
			}
		}
		if err := s.moveLabels(ctx, c, projectID, p.Name, p.Version, append(labels, LabelLatest), now); err != nil {
			return err
		}
		if np.Tags != nil {
			if err := setPromptTags(ctx, c, projectID, p.Name, tags); err != nil {
				return err
			}
		}
		if err := s.emit(ctx, c, watch, p.Version); err != nil {
			return err
		}
		p, err = getPrompt(ctx, c, projectID, p.Name, PromptSelector{Version: p.Version})
		return err
	})
	if err != nil {
		return Prompt{}, err
	}
	return p, nil
}

// checkNewPrompt validates and normalises the input; the version is not set yet.
func (s *Store) checkNewPrompt(projectID string, np NewPrompt) (Prompt, []promptcompose.Ref, error) {
	name, err := checkPromptName(np.Name)
	if err != nil {
		return Prompt{}, nil, err
	}
	p := Prompt{ID: uuid.NewString(), ProjectID: projectID, Name: name, Type: np.Type, CreatedBy: np.CreatedBy}
	if p.Type == "" {
		p.Type = PromptText
	}
	if p.CreatedBy == "" {
		p.CreatedBy = "API"
	}
	if len(np.CommitMessage) > maxCommitMessage {
		return Prompt{}, nil, fmt.Errorf("%w: commitMessage must be at most %d characters", ErrInvalid, maxCommitMessage)
	}
	p.CommitMessage = np.CommitMessage
	if p.Config, err = normalizeJSON(np.Config, `{}`, "config"); err != nil {
		return Prompt{}, nil, err
	}
	var texts []string
	switch p.Type {
	case PromptText:
		var text string
		if err := json.Unmarshal(np.Prompt, &text); err != nil {
			return Prompt{}, nil, fmt.Errorf("%w: prompt: a text prompt must be a string", ErrInvalid)
		}
		p.Prompt, _ = json.Marshal(text)
		texts = []string{text}
	case PromptChat:
		msgs, err := checkChatMessages(np.Prompt)
		if err != nil {
			return Prompt{}, nil, err
		}
		p.Prompt, _ = json.Marshal(msgs)
		for _, m := range msgs {
			texts = append(texts, m.Content)
		}
	default:
		return Prompt{}, nil, fmt.Errorf("%w: type %q must be %q or %q", ErrInvalid, p.Type, PromptText, PromptChat)
	}
	refs, err := parsePromptRefs(texts)
	if err != nil {
		return Prompt{}, nil, err
	}
	return p, refs, nil
}

func checkChatMessages(raw json.RawMessage) ([]ChatMessage, error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, fmt.Errorf("%w: prompt: a chat prompt must be an array of messages", ErrInvalid)
	}
	msgs := make([]ChatMessage, 0, len(items))
	var variables []string
	placeholders := map[string]bool{}
	for i, item := range items {
		str := func(key string) (string, error) {
			var v string
			if err := json.Unmarshal(item[key], &v); err != nil {
				return "", fmt.Errorf("%w: prompt[%d].%s must be a string", ErrInvalid, i, key)
			}
			return v, nil
		}
		var typ string
		if item["type"] != nil {
			var err error
			if typ, err = str("type"); err != nil {
				return nil, err
			}
		}
		switch typ {
		case placeholderType:
			name, err := str("name")
			if err != nil {
				return nil, err
			}
			if !placeholderPattern.MatchString(name) {
				return nil, fmt.Errorf("%w: prompt[%d].name %q must start with a letter and hold only letters, digits and '_'", ErrInvalid, i, name)
			}
			placeholders[name] = true
			msgs = append(msgs, ChatMessage{Type: placeholderType, Name: name})
		case "", "chatmessage":
			role, err := str("role")
			if err != nil {
				return nil, err
			}
			if role == "" {
				return nil, fmt.Errorf("%w: prompt[%d].role must not be empty", ErrInvalid, i)
			}
			content, err := str("content")
			if err != nil {
				return nil, err
			}
			variables = append(variables, promptVariables(content)...)
			msgs = append(msgs, ChatMessage{Role: role, Content: content})
		default:
			return nil, fmt.Errorf("%w: prompt[%d].type %q must be \"chatmessage\" or \"placeholder\"", ErrInvalid, i, typ)
		}
	}
	for _, v := range variables {
		if placeholders[v] {
			return nil, fmt.Errorf("%w: prompt: %q is used both as a variable and as a placeholder", ErrInvalid, v)
		}
	}
	return msgs, nil
}

// promptVariables returns the names of the {{variables}} in text.
func promptVariables(text string) []string {
	var out []string
	for _, m := range variablePattern.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

func checkPromptName(name string) (string, error) {
	switch {
	case name == "" || strings.TrimSpace(name) != name:
		return "", fmt.Errorf("%w: name must be non-empty, without leading or trailing spaces", ErrInvalid)
	case len(name) > maxPromptName:
		return "", fmt.Errorf("%w: name must be at most %d characters", ErrInvalid, maxPromptName)
	case strings.ContainsAny(name, "|<>"):
		return "", fmt.Errorf("%w: name %q must not contain '|', '<' or '>'", ErrInvalid, name)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return "", fmt.Errorf("%w: name %q: folders are separated by single '/' and never empty", ErrInvalid, name)
	case slices.Contains(reservedPromptNames, name):
		return "", fmt.Errorf("%w: name %q is reserved", ErrInvalid, name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return "", fmt.Errorf("%w: name must not contain control characters", ErrInvalid)
		}
	}
	return name, nil
}

// checkLabels validates labels and returns them without duplicates;
// allowLatest says whether `latest` may be named (it is ignored then, since
// it moves by itself).
func checkLabels(labels []string, allowLatest bool) ([]string, error) {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		if !promptcompose.ValidLabel(l) {
			return nil, fmt.Errorf("%w: label %q must be %s", ErrInvalid, l, promptcompose.LabelRule)
		}
		if l == LabelLatest {
			if !allowLatest {
				return nil, fmt.Errorf("%w: label %q is set automatically on the highest version and cannot be moved", ErrInvalid, LabelLatest)
			}
			continue
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

func checkTags(tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t == "" || len(t) > maxPromptName {
			return nil, fmt.Errorf("%w: tags must be 1-%d characters", ErrInvalid, maxPromptName)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// normalizeJSON checks that raw is JSON and returns it compact; absent or
// null gives def.
func normalizeJSON(raw json.RawMessage, def, field string) (json.RawMessage, error) {
	if isNullJSON(raw) {
		return json.RawMessage(def), nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: %s must be JSON: %w", ErrInvalid, field, err)
	}
	out, _ := json.Marshal(v)
	return out, nil
}

func isNullJSON(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// lockPrompt serialises writers of one prompt name. SQLite transactions
// already hold the database's write lock; PostgreSQL takes an advisory lock
// on the name for the rest of the transaction (ids and names hold no '|').
func (s *Store) lockPrompt(ctx context.Context, c conn, projectID, name string) error {
	if !s.postgres {
		return nil
	}
	if _, err := c.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, "prompt|"+projectID+"|"+name); err != nil {
		return fmt.Errorf("lock prompt %q: %w", name, err)
	}
	return nil
}

// moveLabels puts labels on one version, taking them off any other version
// of the name.
func (s *Store) moveLabels(ctx context.Context, c conn, projectID, name string, version int, labels []string, now int64) error {
	for _, l := range labels {
		var from sql.NullInt64
		err := c.queryRow(ctx, `SELECT version FROM prompt_labels WHERE project_id = ? AND name = ? AND label = ?`,
			projectID, name, l).Scan(&from)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read label %q of prompt %q: %w", l, name, err)
		}
		if from.Valid && int(from.Int64) == version {
			continue
		}
		if _, err := c.exec(ctx, `INSERT INTO prompt_labels (project_id, name, label, version) VALUES (?, ?, ?, ?)
			ON CONFLICT (project_id, name, label) DO UPDATE SET version = excluded.version`,
			projectID, name, l, version); err != nil {
			return fmt.Errorf("set label %q of prompt %q: %w", l, name, err)
		}
		if _, err := c.exec(ctx, `UPDATE prompts SET updated_at = ? WHERE project_id = ? AND name = ? AND version IN (?, ?)`,
			now, projectID, name, version, from.Int64); err != nil {
			return fmt.Errorf("touch prompt %q: %w", name, err)
		}
	}
	return nil
}

func setPromptTags(ctx context.Context, c conn, projectID, name string, tags []string) error {
	if _, err := c.exec(ctx, `DELETE FROM prompt_tags WHERE project_id = ? AND name = ?`, projectID, name); err != nil {
		return fmt.Errorf("replace tags of prompt %q: %w", name, err)
	}
	for _, t := range tags {
		if _, err := c.exec(ctx, `INSERT INTO prompt_tags (project_id, name, tag) VALUES (?, ?, ?)`, projectID, name, t); err != nil {
			return fmt.Errorf("tag prompt %q: %w", name, err)
		}
	}
	return nil
}

const promptColumns = `id, project_id, name, version, type, prompt, config, commit_message, created_by, created_at, updated_at`

// GetPrompt returns one version of a prompt as stored, references unresolved.
func (s *Store) GetPrompt(ctx context.Context, projectID, name string, sel PromptSelector) (Prompt, error) {
	return getPrompt(ctx, s.conn(), projectID, name, sel)
}

func getPrompt(ctx context.Context, c conn, projectID, name string, sel PromptSelector) (Prompt, error) {
	var row *sql.Row
	if sel.Version > 0 {
		row = c.queryRow(ctx, `SELECT `+promptColumns+` FROM prompts WHERE project_id = ? AND name = ? AND version = ?`,
			projectID, name, sel.Version)
	} else {
		row = c.queryRow(ctx, `SELECT `+promptColumns+` FROM prompts p WHERE project_id = ? AND name = ? AND version = (
			SELECT version FROM prompt_labels l WHERE l.project_id = p.project_id AND l.name = p.name AND l.label = ?)`,
			projectID, name, sel.label())
	}
	p, err := scanPrompt(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Prompt{}, fmt.Errorf("prompt '%s' with %s: %w", name, sel, ErrNotFound)
	}
	if err != nil {
		return Prompt{}, fmt.Errorf("get prompt %q: %w", name, err)
	}
	labels, err := promptLabels(ctx, c, projectID, name)
	if err != nil {
		return Prompt{}, err
	}
	if ls := labels[p.Version]; ls != nil {
		p.Labels = ls
	}
	if p.Tags, err = promptTags(ctx, c, projectID, name); err != nil {
		return Prompt{}, err
	}
	return p, nil
}

func scanPrompt(r scanner) (Prompt, error) {
	var (
		p                    Prompt
		prompt, config       string
		createdAt, updatedAt int64
	)
	if err := r.Scan(&p.ID, &p.ProjectID, &p.Name, &p.Version, &p.Type, &prompt, &config, &p.CommitMessage, &p.CreatedBy,
		&createdAt, &updatedAt); err != nil {
		return Prompt{}, err
	}
	p.Prompt, p.Config = json.RawMessage(prompt), json.RawMessage(config)
	p.CreatedAt, p.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	p.Labels, p.Tags = []string{}, []string{}
	return p, nil
}

// promptLabels returns the sorted labels of every version of a name.
func promptLabels(ctx context.Context, c conn, projectID, name string) (map[int][]string, error) {
	rows, err := c.query(ctx, `SELECT version, label FROM prompt_labels WHERE project_id = ? AND name = ? ORDER BY label`,
		projectID, name)
	if err != nil {
		return nil, fmt.Errorf("labels of prompt %q: %w", name, err)
	}
	defer rows.Close()
	out := map[int][]string{}
	for rows.Next() {
		var (
			v int
			l string
		)
		if err := rows.Scan(&v, &l); err != nil {
			return nil, fmt.Errorf("labels of prompt %q: %w", name, err)
		}
		out[v] = append(out[v], l)
	}
	return out, rows.Err()
}

func promptTags(ctx context.Context, c conn, projectID, name string) ([]string, error) {
	rows, err := c.query(ctx, `SELECT tag FROM prompt_tags WHERE project_id = ? AND name = ? ORDER BY tag`, projectID, name)
	if err != nil {
		return nil, fmt.Errorf("tags of prompt %q: %w", name, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("tags of prompt %q: %w", name, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// SetPromptLabels adds labels to one version and takes them off the others,
// in one transaction: concurrent moves of a label leave it on exactly one
// version. `latest` cannot be moved.
func (s *Store) SetPromptLabels(ctx context.Context, projectID, name string, version int, labels []string) (Prompt, error) {
	labels, err := checkLabels(labels, false)
	if err != nil {
		return Prompt{}, err
	}
	var p Prompt
	err = s.inTx(ctx, func(c conn) error {
		if err := s.lockPrompt(ctx, c, projectID, name); err != nil {
			return err
		}
		if _, err := getPrompt(ctx, c, projectID, name, PromptSelector{Version: version}); err != nil {
			return err
		}
		watch, err := s.watchPrompt(ctx, c, projectID, name)
		if err != nil {
			return err
		}
		if err := s.moveLabels(ctx, c, projectID, name, version, labels, s.micros()); err != nil {
			return err
		}
		if err := s.emit(ctx, c, watch, 0); err != nil {
			return err
		}
		p, err = getPrompt(ctx, c, projectID, name, PromptSelector{Version: version})
		return err
	})
	return p, err
}

// RemovePromptLabel takes a label off whichever version of the name has it.
// `latest` stays: it always marks the highest version.
func (s *Store) RemovePromptLabel(ctx context.Context, projectID, name, label string) error {
	if _, err := checkLabels([]string{label}, false); err != nil {
		return err
	}
	return s.inTx(ctx, func(c conn) error {
		if err := s.lockPrompt(ctx, c, projectID, name); err != nil {
			return err
		}
		watch, err := s.watchPrompt(ctx, c, projectID, name)
		if err != nil {
			return err
		}
		res, err := c.exec(ctx, `DELETE FROM prompt_labels WHERE project_id = ? AND name = ? AND label = ?`, projectID, name, label)
		if err != nil {
			return fmt.Errorf("remove label %q of prompt %q: %w", label, name, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("label %q of prompt '%s': %w", label, name, ErrNotFound)
		}
		return s.emit(ctx, c, watch, 0)
	})
}

// DeletePrompts deletes the versions of a prompt that sel picks: the one
// version, every version with the label, or (zero selector) all versions.
// It refuses when another prompt references a deleted version or label.
// When the latest version goes, `latest` moves to the highest one left.
func (s *Store) DeletePrompts(ctx context.Context, projectID, name string, sel PromptSelector) error {
	return s.inTx(ctx, func(c conn) error {
		if err := s.lockPrompt(ctx, c, projectID, name); err != nil {
			return err
		}
		labels, err := promptLabels(ctx, c, projectID, name)
		if err != nil {
			return err
		}
		versions, err := promptVersions(ctx, c, projectID, name)
		if err != nil {
			return err
		}
		var doomed []int
		switch {
		case sel.Version > 0:
			if slices.Contains(versions, sel.Version) {
				doomed = []int{sel.Version}
			}
		case sel.Label != "":
			for v, ls := range labels {
				if slices.Contains(ls, sel.Label) {
					doomed = append(doomed, v)
				}
			}
		default:
			doomed = versions
		}
		if len(doomed) == 0 {
			if sel == (PromptSelector{}) {
				return fmt.Errorf("prompt '%s': %w", name, ErrNotFound)
			}
			return fmt.Errorf("prompt '%s' with %s: %w", name, sel, ErrNotFound)
		}
		all := len(doomed) == len(versions)
		if err := checkNoDependents(ctx, c, projectID, name, doomed, labels, all); err != nil {
			return err
		}
		watch, err := s.watchPrompt(ctx, c, projectID, name)
		if err != nil {
			return err
		}
		if err := watch.deleting(ctx, c, doomed); err != nil {
			return err
		}
		for _, v := range doomed {
			if _, err := c.exec(ctx, `DELETE FROM prompt_labels WHERE project_id = ? AND name = ? AND version = ?`, projectID, name, v); err != nil {
				return fmt.Errorf("delete labels of prompt %q: %w", name, err)
			}
			if _, err := c.exec(ctx, `DELETE FROM prompts WHERE project_id = ? AND name = ? AND version = ?`, projectID, name, v); err != nil {
				return fmt.Errorf("delete prompt %q version %d: %w", name, v, err)
			}
		}
		if all {
			if _, err := c.exec(ctx, `DELETE FROM prompt_tags WHERE project_id = ? AND name = ?`, projectID, name); err != nil {
				return err
			}
			return s.emit(ctx, c, watch, 0)
		}
		var highest int
		if err := c.queryRow(ctx, `SELECT MAX(version) FROM prompts WHERE project_id = ? AND name = ?`, projectID, name).
			Scan(&highest); err != nil {
			return fmt.Errorf("highest version of prompt %q: %w", name, err)
		}
		if err := s.moveLabels(ctx, c, projectID, name, highest, []string{LabelLatest}, s.micros()); err != nil {
			return err
		}
		return s.emit(ctx, c, watch, 0)
	})
}

func promptVersions(ctx context.Context, c conn, projectID, name string) ([]int, error) {
	rows, err := c.query(ctx, `SELECT version FROM prompts WHERE project_id = ? AND name = ? ORDER BY version`, projectID, name)
	if err != nil {
		return nil, fmt.Errorf("versions of prompt %q: %w", name, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// checkNoDependents refuses a deletion that would break a reference from a
// version of another prompt (references within the name go away with it).
func checkNoDependents(ctx context.Context, c conn, projectID, name string, doomed []int, labels map[int][]string, all bool) error {
	rows, err := c.query(ctx, `SELECT p.name, p.version, d.child_label, d.child_version
		FROM prompt_dependencies d JOIN prompts p ON p.id = d.parent_id
		WHERE d.project_id = ? AND d.child_name = ? AND p.name <> ?
		ORDER BY p.name, p.version`, projectID, name, name)
	if err != nil {
		return fmt.Errorf("dependents of prompt %q: %w", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			parent       string
			parentVer    int
			label        sql.NullString
			childVersion sql.NullInt64
		)
		if err := rows.Scan(&parent, &parentVer, &label, &childVersion); err != nil {
			return err
		}
		broken := all
		for _, v := range doomed {
			switch {
			case childVersion.Valid && int(childVersion.Int64) == v:
				broken = true
			// latest moves to the remaining highest version, so it stays.
			case label.Valid && label.String != LabelLatest && slices.Contains(labels[v], label.String):
				broken = true
			}
		}
		if broken {
			return fmt.Errorf("%w: prompt %q version %d references %q; delete or change that prompt first",
				ErrInvalid, parent, parentVer, name)
		}
	}
	return rows.Err()
}

// PromptFilter selects prompt versions for ListPrompts. Zero fields do not filter.
type PromptFilter struct {
	Name    string
	Label   string
	Tag     string
	Version int
	// UpdatedFrom (inclusive) and UpdatedTo (exclusive) bound updated_at.
	UpdatedFrom time.Time
	UpdatedTo   time.Time
	Offset      int
	Limit       int
}

// PromptSummary describes a prompt name by its versions that match a filter.
type PromptSummary struct {
	Name     string
	Type     string
	Versions []int    // ascending
	Labels   []string // sorted, over the matching versions
	// VersionLabels holds each matching version's sorted labels.
	VersionLabels map[int][]string
	Tags          []string
	LastUpdatedAt time.Time
	LastConfig    json.RawMessage // of the highest matching version
}

// ListPrompts returns one page of prompt names, in name order, and the
// number of names that match.
func (s *Store) ListPrompts(ctx context.Context, projectID string, f PromptFilter) ([]PromptSummary, int, error) {
	cond, args := promptFilterSQL(projectID, f)
	c := s.conn()
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(DISTINCT name) FROM prompts p WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count prompts: %w", err)
	}
	rows, err := c.query(ctx, `SELECT name FROM prompts p WHERE `+cond+` GROUP BY name ORDER BY name LIMIT ? OFFSET ?`,
		append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list prompts: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			_ = rows.Close() // the scan error is the one to report
			return nil, 0, err
		}
		names = append(names, n)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, 0, fmt.Errorf("list prompts: %w", err)
	}
	out := make([]PromptSummary, 0, len(names))
	for _, n := range names {
		sum, err := summarizePrompt(ctx, c, projectID, n, f)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, sum)
	}
	return out, total, nil
}

func promptFilterSQL(projectID string, f PromptFilter) (string, []any) {
	conds := []string{"p.project_id = ?"}
	args := []any{projectID}
	if f.Name != "" {
		conds, args = append(conds, "p.name = ?"), append(args, f.Name)
	}
	if f.Version > 0 {
		conds, args = append(conds, "p.version = ?"), append(args, f.Version)
	}
	if f.Label != "" {
		conds = append(conds, `EXISTS (SELECT 1 FROM prompt_labels l
			WHERE l.project_id = p.project_id AND l.name = p.name AND l.version = p.version AND l.label = ?)`)
		args = append(args, f.Label)
	}
	if f.Tag != "" {
		conds = append(conds, `EXISTS (SELECT 1 FROM prompt_tags t WHERE t.project_id = p.project_id AND t.name = p.name AND t.tag = ?)`)
		args = append(args, f.Tag)
	}
	if !f.UpdatedFrom.IsZero() {
		conds, args = append(conds, "p.updated_at >= ?"), append(args, f.UpdatedFrom.UnixMicro())
	}
	if !f.UpdatedTo.IsZero() {
		conds, args = append(conds, "p.updated_at < ?"), append(args, f.UpdatedTo.UnixMicro())
	}
	return strings.Join(conds, " AND "), args
}

func summarizePrompt(ctx context.Context, c conn, projectID, name string, f PromptFilter) (PromptSummary, error) {
	f.Name = name
	cond, args := promptFilterSQL(projectID, f)
	rows, err := c.query(ctx, `SELECT `+promptColumns+` FROM prompts p WHERE `+cond+` ORDER BY version`, args...)
	if err != nil {
		return PromptSummary{}, fmt.Errorf("versions of prompt %q: %w", name, err)
	}
	defer rows.Close()
	sum := PromptSummary{Name: name, Versions: []int{}, Labels: []string{}, VersionLabels: map[int][]string{}}
	var last time.Time
	for rows.Next() {
		p, err := scanPrompt(rows)
		if err != nil {
			return PromptSummary{}, err
		}
		sum.Type, sum.LastConfig = p.Type, p.Config
		sum.Versions = append(sum.Versions, p.Version)
		if p.UpdatedAt.After(last) {
			last = p.UpdatedAt
		}
	}
	if err := rows.Err(); err != nil {
		return PromptSummary{}, err
	}
	sum.LastUpdatedAt = last
	labels, err := promptLabels(ctx, c, projectID, name)
	if err != nil {
		return PromptSummary{}, err
	}
	for _, v := range sum.Versions {
		if ls := labels[v]; ls != nil {
			sum.Labels = append(sum.Labels, ls...)
			sum.VersionLabels[v] = ls
		}
	}
	slices.Sort(sum.Labels)
	if sum.Tags, err = promptTags(ctx, c, projectID, name); err != nil {
		return PromptSummary{}, err
	}
	return sum, nil
}

// PromptVersionRef names one version of a prompt, as generations that used
// it carry it.
type PromptVersionRef struct {
	Name    string
	Version int
}

// maxPromptRefsPerQuery bounds the placeholders of one lookup.
const maxPromptRefsPerQuery = 200

// PromptVersionIDs returns the ids of the prompt versions the project has of
// refs; versions that do not exist (any more) are left out.
func (s *Store) PromptVersionIDs(ctx context.Context, projectID string, refs []PromptVersionRef) (map[PromptVersionRef]string, error) {
	ids := make(map[PromptVersionRef]string, len(refs))
	for chunk := range slices.Chunk(refs, maxPromptRefsPerQuery) {
		conds := make([]string, len(chunk))
		args := make([]any, 0, 1+2*len(chunk))
		args = append(args, projectID)
		for i, r := range chunk {
			conds[i] = "(name = ? AND version = ?)"
			args = append(args, r.Name, r.Version)
		}
		rows, err := s.conn().query(ctx, `SELECT name, version, id FROM prompts WHERE project_id = ? AND (`+
			strings.Join(conds, " OR ")+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("look up prompt versions: %w", err)
		}
		for rows.Next() {
			var r PromptVersionRef
			var id string
			if err := rows.Scan(&r.Name, &r.Version, &id); err != nil {
				return nil, errors.Join(fmt.Errorf("look up prompt versions: %w", err), rows.Close())
			}
			ids[r] = id
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("look up prompt versions: %w", err)
		}
	}
	return ids, nil
}
