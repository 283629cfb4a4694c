package controlplane

import (
	"context"
	"fmt"
)

// migration is one schema step. Versions are applied in order and recorded in
// schema_migrations; an applied migration is never edited, a change is a new
// migration appended to the list.
type migration struct {
	version int64
	name    string
	stmts   []string
	// sqlite, when set, replaces stmts on SQLite, for the changes it
	// cannot make with ALTER TABLE.
	sqlite []string
	// sqliteSchema are edits of SQLite's stored table definitions, made
	// after the statements: only changes that every stored row already
	// satisfies (https://sqlite.org/lang_altertable.html#otheralter).
	sqliteSchema []schemaEdit
}

// schemaEdit replaces old with new in a table's CREATE statement.
type schemaEdit struct{ table, old, new string }

// editSQLiteSchema applies edits to the stored schema and bumps the schema
// version so that every connection reloads it.
func editSQLiteSchema(ctx context.Context, c conn, edits []schemaEdit) error {
	var version int64
	if err := c.queryRow(ctx, `PRAGMA schema_version`).Scan(&version); err != nil {
		return err
	}
	if _, err := c.exec(ctx, `PRAGMA writable_schema = ON`); err != nil {
		return err
	}
	for _, e := range edits {
		res, err := c.exec(ctx, `UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = ? AND instr(sql, ?) > 0`,
			e.old, e.new, e.table, e.old)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("table %s: its definition does not hold %q", e.table, e.old)
		}
	}
	if _, err := c.exec(ctx, fmt.Sprintf(`PRAGMA schema_version = %d`, version+1)); err != nil {
		return err
	}
	if _, err := c.exec(ctx, `PRAGMA writable_schema = OFF`); err != nil {
		return err
	}
	var ok string
	if err := c.queryRow(ctx, `PRAGMA quick_check`).Scan(&ok); err != nil {
		return fmt.Errorf("schema check after editing: %w", err)
	}
	if ok != "ok" {
		return fmt.Errorf("schema check after editing: %s", ok)
	}
	return nil
}

// migrationLock is the PostgreSQL advisory lock key that serialises
// migrations between processes opening the same database.
const migrationLock int64 = 0x676c617373626f78 // "glassbox"

var migrations = []migration{
	{
		version: 1,
		name:    "organizations, projects, users, memberships, api keys",
		stmts: []string{
			`CREATE TABLE organizations (
				id         TEXT PRIMARY KEY,
				name       TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL
			)`,
			// Projects are deleted softly so that an id is never reused while
			// trace data of the old project may still exist.
			`CREATE TABLE projects (
				id             TEXT PRIMARY KEY,
				org_id         TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
				name           TEXT NOT NULL,
				metadata       TEXT NOT NULL,
				retention_days INTEGER NOT NULL DEFAULT 0,
				created_at     BIGINT NOT NULL,
				updated_at     BIGINT NOT NULL,
				deleted_at     BIGINT,
				UNIQUE (id, org_id)
			)`,
			`CREATE UNIQUE INDEX projects_org_name ON projects (org_id, name) WHERE deleted_at IS NULL`,
			`CREATE TABLE users (
				id            TEXT PRIMARY KEY,
				email         TEXT NOT NULL UNIQUE,
				name          TEXT NOT NULL,
				password_hash TEXT,
				created_at    BIGINT NOT NULL,
				updated_at    BIGINT NOT NULL
			)`,
			`CREATE TABLE organization_memberships (
				org_id     TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
				user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
				role       TEXT NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER', 'VIEWER')),
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				PRIMARY KEY (org_id, user_id)
			)`,
			`CREATE INDEX organization_memberships_user ON organization_memberships (user_id)`,
			// A project role exists only beside an organization membership of
			// the same user in the project's own organization.
			`CREATE TABLE project_memberships (
				project_id TEXT NOT NULL,
				org_id     TEXT NOT NULL,
				user_id    TEXT NOT NULL,
				role       TEXT NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER', 'VIEWER')),
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				PRIMARY KEY (project_id, user_id),
				FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
				FOREIGN KEY (org_id, user_id) REFERENCES organization_memberships (org_id, user_id) ON DELETE CASCADE
			)`,
			`CREATE INDEX project_memberships_org_user ON project_memberships (org_id, user_id)`,
			// The composite foreign key keeps a project key's org_id equal to
			// its project's organization.
			`CREATE TABLE api_keys (
				id             TEXT PRIMARY KEY,
				public_key     TEXT NOT NULL UNIQUE,
				secret_hash    TEXT NOT NULL,
				display_secret TEXT NOT NULL,
				note           TEXT NOT NULL,
				scope          TEXT NOT NULL,
				org_id         TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
				project_id     TEXT,
				created_at     BIGINT NOT NULL,
				last_used_at   BIGINT,
				revoked_at     BIGINT,
				FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
				CHECK ((scope = 'project' AND project_id IS NOT NULL)
					OR (scope = 'organization' AND project_id IS NULL))
			)`,
			`CREATE INDEX api_keys_owner ON api_keys (org_id, project_id)`,
		},
	},
	{
		version: 10,
		name:    "prompts, labels, tags, dependencies",
		stmts: []string{
			// prompt holds JSON: a string (text) or a message array (chat).
			`CREATE TABLE prompts (
				id             TEXT PRIMARY KEY,
				project_id     TEXT NOT NULL REFERENCES projects (id),
				name           TEXT NOT NULL,
				version        INTEGER NOT NULL,
				type           TEXT NOT NULL CHECK (type IN ('text', 'chat')),
				prompt         TEXT NOT NULL,
				config         TEXT NOT NULL,
				commit_message TEXT NOT NULL,
				created_by     TEXT NOT NULL,
				created_at     BIGINT NOT NULL,
				updated_at     BIGINT NOT NULL,
				UNIQUE (project_id, name, version)
			)`,
			// The primary key is what keeps a label on at most one version.
			`CREATE TABLE prompt_labels (
				project_id TEXT NOT NULL,
				name       TEXT NOT NULL,
				label      TEXT NOT NULL,
				version    INTEGER NOT NULL,
				PRIMARY KEY (project_id, name, label),
				FOREIGN KEY (project_id, name, version) REFERENCES prompts (project_id, name, version) ON DELETE CASCADE
			)`,
			`CREATE INDEX prompt_labels_version ON prompt_labels (project_id, name, version)`,
			// Tags belong to the name: every version shows the same ones.
			`CREATE TABLE prompt_tags (
				project_id TEXT NOT NULL,
				name       TEXT NOT NULL,
				tag        TEXT NOT NULL,
				PRIMARY KEY (project_id, name, tag)
			)`,
			`CREATE INDEX prompt_tags_tag ON prompt_tags (project_id, tag)`,
			// References parsed from a version's text, so that deleting what
			// another prompt depends on can be refused.
			`CREATE TABLE prompt_dependencies (
				parent_id     TEXT NOT NULL REFERENCES prompts (id) ON DELETE CASCADE,
				project_id    TEXT NOT NULL,
				child_name    TEXT NOT NULL,
				child_label   TEXT,
				child_version INTEGER,
				CHECK ((child_label IS NULL) <> (child_version IS NULL))
			)`,
			`CREATE INDEX prompt_dependencies_child ON prompt_dependencies (project_id, child_name)`,
			`CREATE INDEX prompt_dependencies_parent ON prompt_dependencies (parent_id)`,
		},
	},
	{
		version: 11,
		name:    "datasets, dataset items, dataset runs and run items",
		stmts: []string{
			// JSON columns hold any JSON value; NULL means none was given.
			`CREATE TABLE datasets (
				id                     TEXT PRIMARY KEY,
				project_id             TEXT NOT NULL REFERENCES projects (id),
				name                   TEXT NOT NULL,
				description            TEXT NOT NULL,
				metadata               TEXT,
				input_schema           TEXT,
				expected_output_schema TEXT,
				created_at             BIGINT NOT NULL,
				updated_at             BIGINT NOT NULL,
				UNIQUE (project_id, name)
			)`,
			`CREATE INDEX datasets_created ON datasets (project_id, created_at)`,
			// Item ids are chosen by clients and unique within a project.
			`CREATE TABLE dataset_items (
				project_id            TEXT NOT NULL,
				id                    TEXT NOT NULL,
				dataset_id            TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
				status                TEXT NOT NULL CHECK (status IN ('ACTIVE', 'ARCHIVED')),
				input                 TEXT,
				expected_output       TEXT,
				metadata              TEXT,
				source_trace_id       TEXT NOT NULL,
				source_observation_id TEXT NOT NULL,
				created_at            BIGINT NOT NULL,
				updated_at            BIGINT NOT NULL,
				PRIMARY KEY (project_id, id)
			)`,
			`CREATE INDEX dataset_items_dataset ON dataset_items (dataset_id, status, created_at)`,
			`CREATE INDEX dataset_items_source_trace ON dataset_items (project_id, source_trace_id)`,
			`CREATE TABLE dataset_runs (
				id          TEXT PRIMARY KEY,
				project_id  TEXT NOT NULL,
				dataset_id  TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
				name        TEXT NOT NULL,
				description TEXT NOT NULL,
				metadata    TEXT,
				created_at  BIGINT NOT NULL,
				updated_at  BIGINT NOT NULL,
				UNIQUE (dataset_id, name)
			)`,
			// One run item per dataset item and run; no foreign key to the
			// item, so results outlive a deleted item.
			`CREATE TABLE dataset_run_items (
				id              TEXT PRIMARY KEY,
				project_id      TEXT NOT NULL,
				dataset_run_id  TEXT NOT NULL REFERENCES dataset_runs (id) ON DELETE CASCADE,
				dataset_item_id TEXT NOT NULL,
				trace_id        TEXT NOT NULL,
				observation_id  TEXT NOT NULL,
				created_at      BIGINT NOT NULL,
				updated_at      BIGINT NOT NULL,
				UNIQUE (dataset_run_id, dataset_item_id)
			)`,
		},
	},
	{
		version: 12,
		name:    "score configs",
		stmts: []string{
			// categories is a JSON array of {value, label}, null for NUMERIC.
			`CREATE TABLE score_configs (
				id          TEXT PRIMARY KEY,
				project_id  TEXT NOT NULL REFERENCES projects (id),
				name        TEXT NOT NULL,
				data_type   TEXT NOT NULL CHECK (data_type IN ('NUMERIC', 'CATEGORICAL', 'BOOLEAN')),
				is_archived INTEGER NOT NULL,
				min_value   DOUBLE PRECISION,
				max_value   DOUBLE PRECISION,
				categories  TEXT NOT NULL,
				description TEXT NOT NULL,
				created_at  BIGINT NOT NULL,
				updated_at  BIGINT NOT NULL
			)`,
			`CREATE INDEX score_configs_project ON score_configs (project_id, created_at)`,
		},
	},
	{
		version: 13,
		name:    "media, server secrets",
		stmts: []string{
			// The id is derived from the content hash, so it repeats across
			// projects; the bytes themselves live in the media directory.
			`CREATE TABLE media (
				project_id         TEXT NOT NULL REFERENCES projects (id),
				id                 TEXT NOT NULL,
				sha256_hash        TEXT NOT NULL,
				content_type       TEXT NOT NULL,
				content_length     BIGINT NOT NULL,
				uploaded_at        BIGINT,
				upload_http_status INTEGER NOT NULL,
				upload_http_error  TEXT NOT NULL,
				upload_time_ms     BIGINT NOT NULL,
				created_at         BIGINT NOT NULL,
				updated_at         BIGINT NOT NULL,
				PRIMARY KEY (project_id, id)
			)`,
			// Keys shared by all API servers on this store, e.g. for signing
			// media URLs; values are base64.
			`CREATE TABLE server_secrets (
				name       TEXT PRIMARY KEY,
				value      TEXT NOT NULL,
				created_at BIGINT NOT NULL
			)`,
		},
	},
	{
		version: 20,
		name:    "model definitions",
		stmts: []string{
			// A project's own prices. start_date 0 means the prices always
			// applied; pricing_tiers is the JSON array of pricing.Tier.
			`CREATE TABLE models (
				id               TEXT PRIMARY KEY,
				project_id       TEXT NOT NULL REFERENCES projects (id),
				model_name       TEXT NOT NULL,
				match_pattern    TEXT NOT NULL,
				start_date       BIGINT NOT NULL,
				unit             TEXT NOT NULL,
				tokenizer_id     TEXT NOT NULL,
				tokenizer_config TEXT,
				pricing_tiers    TEXT NOT NULL,
				created_at       BIGINT NOT NULL,
				updated_at       BIGINT NOT NULL,
				UNIQUE (project_id, model_name, start_date)
			)`,
		},
	},
	{
		version: 21,
		name:    "project settings",
		stmts: []string{
			// sampling_rate NULL leaves the project's default rate to the
			// collector; sampling_environments is a JSON object of rates.
			`CREATE TABLE project_settings (
				project_id            TEXT PRIMARY KEY REFERENCES projects (id),
				sampling_rate         DOUBLE PRECISION,
				sampling_environments TEXT NOT NULL,
				updated_at            BIGINT NOT NULL
			)`,
		},
	},
	{
		version: 30,
		name:    "llm connections, evaluators, evaluator rules, prompt experiments, evaluation jobs",
		stmts: []string{
			// secret_key and extra_headers are sealed (SecretBox) and bound to
			// the row id; they are never returned.
			`CREATE TABLE llm_connections (
				id              TEXT PRIMARY KEY,
				project_id      TEXT NOT NULL REFERENCES projects (id),
				provider        TEXT NOT NULL,
				adapter         TEXT NOT NULL CHECK (adapter IN ('openai', 'anthropic')),
				base_url        TEXT NOT NULL,
				secret_key      TEXT NOT NULL,
				display_secret  TEXT NOT NULL,
				extra_headers   TEXT NOT NULL,
				header_keys     TEXT NOT NULL,
				custom_models   TEXT NOT NULL,
				default_model   TEXT NOT NULL,
				default_params  TEXT NOT NULL,
				max_concurrency INTEGER NOT NULL,
				timeout_ms      BIGINT NOT NULL,
				created_at      BIGINT NOT NULL,
				updated_at      BIGINT NOT NULL,
				UNIQUE (project_id, provider)
			)`,
			// definition is the JSON of the kind's settings, output and variables.
			`CREATE TABLE evaluators (
				id         TEXT PRIMARY KEY,
				project_id TEXT NOT NULL REFERENCES projects (id),
				name       TEXT NOT NULL,
				kind       TEXT NOT NULL CHECK (kind IN ('llm', 'cel', 'webhook')),
				score_name TEXT NOT NULL,
				definition TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				UNIQUE (project_id, name)
			)`,
			// Evaluators and connections in use cannot be deleted.
			`CREATE TABLE eval_rules (
				id            TEXT PRIMARY KEY,
				project_id    TEXT NOT NULL REFERENCES projects (id),
				name          TEXT NOT NULL,
				evaluator_id  TEXT NOT NULL REFERENCES evaluators (id),
				connection_id TEXT REFERENCES llm_connections (id),
				target        TEXT NOT NULL CHECK (target IN ('trace', 'observation')),
				filter        TEXT NOT NULL,
				sampling_rate DOUBLE PRECISION NOT NULL,
				delay_ms      BIGINT NOT NULL,
				active        INTEGER NOT NULL,
				variables     TEXT NOT NULL,
				created_at    BIGINT NOT NULL,
				updated_at    BIGINT NOT NULL,
				UNIQUE (project_id, name)
			)`,
			`CREATE INDEX eval_rules_active ON eval_rules (active, project_id)`,
			`CREATE TABLE eval_experiments (
				id             TEXT PRIMARY KEY,
				project_id     TEXT NOT NULL REFERENCES projects (id),
				dataset_id     TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
				run_name       TEXT NOT NULL,
				description    TEXT NOT NULL,
				prompt_name    TEXT NOT NULL,
				prompt_version INTEGER NOT NULL,
				connection_id  TEXT NOT NULL REFERENCES llm_connections (id),
				model          TEXT NOT NULL,
				model_params   TEXT NOT NULL,
				evaluator_ids  TEXT NOT NULL,
				created_at     BIGINT NOT NULL,
				updated_at     BIGINT NOT NULL,
				UNIQUE (dataset_id, run_name)
			)`,
			// The durable queue. A job belongs to a rule or an experiment; the
			// unique keys keep one job per source and target, so a retried
			// enqueue never adds a second. lease_until fences a running job:
			// once it passes, another worker may claim the job again.
			`CREATE TABLE eval_jobs (
				id                 TEXT PRIMARY KEY,
				project_id         TEXT NOT NULL,
				kind               TEXT NOT NULL CHECK (kind IN ('RULE', 'BACKFILL', 'EXPERIMENT_ITEM', 'EXPERIMENT_EVAL')),
				rule_id            TEXT REFERENCES eval_rules (id) ON DELETE CASCADE,
				experiment_id      TEXT REFERENCES eval_experiments (id) ON DELETE CASCADE,
				evaluator_id       TEXT NOT NULL,
				trace_id           TEXT NOT NULL,
				observation_id     TEXT NOT NULL,
				dataset_item_id    TEXT NOT NULL,
				target_key         TEXT NOT NULL,
				state              TEXT NOT NULL,
				status             TEXT NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'SKIPPED')),
				attempts           INTEGER NOT NULL,
				due_at             BIGINT NOT NULL,
				lease_until        BIGINT NOT NULL,
				lease_owner        TEXT NOT NULL,
				last_error         TEXT NOT NULL,
				score_id           TEXT NOT NULL,
				execution_trace_id TEXT NOT NULL,
				created_at         BIGINT NOT NULL,
				updated_at         BIGINT NOT NULL,
				CHECK ((rule_id IS NULL) <> (experiment_id IS NULL))
			)`,
			`CREATE UNIQUE INDEX eval_jobs_rule_target ON eval_jobs (rule_id, target_key)`,
			`CREATE UNIQUE INDEX eval_jobs_experiment_target ON eval_jobs (experiment_id, target_key)`,
			`CREATE INDEX eval_jobs_due ON eval_jobs (status, due_at)`,
			`CREATE INDEX eval_jobs_project ON eval_jobs (project_id, created_at)`,
			// Evaluators of experiment traces look up the dataset item by trace.
			`CREATE INDEX dataset_run_items_trace ON dataset_run_items (project_id, trace_id)`,
		},
	},
	{
		version: 31,
		name:    "annotation queues, items, assignments",
		stmts: []string{
			// score_config_ids is a JSON array of score config ids.
			`CREATE TABLE annotation_queues (
				id               TEXT PRIMARY KEY,
				project_id       TEXT NOT NULL REFERENCES projects (id),
				name             TEXT NOT NULL,
				description      TEXT NOT NULL,
				score_config_ids TEXT NOT NULL,
				created_at       BIGINT NOT NULL,
				updated_at       BIGINT NOT NULL,
				UNIQUE (project_id, name)
			)`,
			// An object is queued at most once per queue; adding it again
			// returns the existing item.
			`CREATE TABLE annotation_queue_items (
				id           TEXT PRIMARY KEY,
				project_id   TEXT NOT NULL,
				queue_id     TEXT NOT NULL REFERENCES annotation_queues (id) ON DELETE CASCADE,
				object_id    TEXT NOT NULL,
				object_type  TEXT NOT NULL CHECK (object_type IN ('TRACE', 'OBSERVATION', 'SESSION')),
				status       TEXT NOT NULL CHECK (status IN ('PENDING', 'COMPLETED')),
				completed_at BIGINT,
				completed_by TEXT NOT NULL,
				created_at   BIGINT NOT NULL,
				updated_at   BIGINT NOT NULL,
				UNIQUE (queue_id, object_type, object_id)
			)`,
			`CREATE INDEX annotation_queue_items_status ON annotation_queue_items (queue_id, status, created_at)`,
			`CREATE TABLE annotation_queue_assignments (
				project_id TEXT NOT NULL,
				queue_id   TEXT NOT NULL REFERENCES annotation_queues (id) ON DELETE CASCADE,
				user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
				created_at BIGINT NOT NULL,
				PRIMARY KEY (queue_id, user_id)
			)`,
		},
	},
	{
		version: 40,
		name:    "sign-in sessions and one-time user links",
		stmts: []string{
			// Only a hash of the session token is stored: a copy of the
			// database signs nobody in.
			`CREATE TABLE ui_sessions (
				token_hash TEXT PRIMARY KEY,
				user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
				created_at BIGINT NOT NULL,
				expires_at BIGINT NOT NULL
			)`,
			`CREATE INDEX ui_sessions_user ON ui_sessions (user_id)`,
			`CREATE INDEX ui_sessions_expiry ON ui_sessions (expires_at)`,
			// Invitation links let an invited person choose a password.
			`CREATE TABLE user_links (
				token_hash TEXT PRIMARY KEY,
				user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
				purpose    TEXT NOT NULL CHECK (purpose IN ('invite')),
				created_at BIGINT NOT NULL,
				expires_at BIGINT NOT NULL
			)`,
			`CREATE INDEX user_links_user ON user_links (user_id)`,
		},
	},
	{
		version: 41,
		name:    "dashboards and dashboard widgets",
		stmts: []string{
			// definition is the JSON grid {"widgets": [placements]}; filters a
			// JSON array in Langfuse's filter-state shape.
			`CREATE TABLE dashboards (
				id          TEXT PRIMARY KEY,
				project_id  TEXT NOT NULL REFERENCES projects (id),
				name        TEXT NOT NULL,
				description TEXT NOT NULL,
				definition  TEXT NOT NULL,
				filters     TEXT NOT NULL,
				created_at  BIGINT NOT NULL,
				updated_at  BIGINT NOT NULL
			)`,
			`CREATE INDEX dashboards_project ON dashboards (project_id, updated_at)`,
			// A widget's query parts are the JSON clients sent, checked by the
			// metrics engine when they are saved and when they run.
			`CREATE TABLE dashboard_widgets (
				id           TEXT PRIMARY KEY,
				project_id   TEXT NOT NULL REFERENCES projects (id),
				name         TEXT NOT NULL,
				description  TEXT NOT NULL,
				view         TEXT NOT NULL,
				dimensions   TEXT NOT NULL,
				metrics      TEXT NOT NULL,
				filters      TEXT NOT NULL,
				chart_type   TEXT NOT NULL,
				chart_config TEXT NOT NULL,
				created_at   BIGINT NOT NULL,
				updated_at   BIGINT NOT NULL
			)`,
			`CREATE INDEX dashboard_widgets_project ON dashboard_widgets (project_id, updated_at)`,
		},
	},
	{
		version: 42,
		name:    "change versions",
		stmts: []string{
			// One counter per kind of setting the pipelines cache; a poller
			// reads one row to learn whether to reload.
			`CREATE TABLE change_versions (
				kind    TEXT PRIMARY KEY,
				version BIGINT NOT NULL
			)`,
			`INSERT INTO change_versions (kind, version) VALUES ('models', 0), ('sampling', 0), ('eval_rules', 0), ('api_keys', 0)`,
		},
	},
	{
		version: 43,
		name:    "comments",
		stmts: []string{
			`CREATE TABLE comments (
				id             TEXT PRIMARY KEY,
				project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
				object_type    TEXT NOT NULL,
				object_id      TEXT NOT NULL,
				content        TEXT NOT NULL,
				author_user_id TEXT NOT NULL,
				created_at     BIGINT NOT NULL,
				updated_at     BIGINT NOT NULL
			)`,
			`CREATE INDEX comments_object ON comments (project_id, object_type, object_id, created_at)`,
		},
	},
	{
		version: 44,
		name:    "organization metadata and deletion",
		stmts: []string{
			`ALTER TABLE organizations ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'`,
			// Organizations are deleted softly, like projects: their deleted
			// projects' rows still reference them.
			`ALTER TABLE organizations ADD COLUMN deleted_at BIGINT`,
		},
	},
	{
		version: 45,
		name:    "dataset item versions",
		stmts: []string{
			// Every state an item had, from valid_from on: reads "as of" a
			// time take each item's newest version at or before it. A
			// deleted item's last version has deleted = 1.
			`CREATE TABLE dataset_item_versions (
				project_id            TEXT NOT NULL,
				item_id               TEXT NOT NULL,
				valid_from            BIGINT NOT NULL,
				dataset_id            TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
				status                TEXT NOT NULL,
				input                 TEXT,
				expected_output       TEXT,
				metadata              TEXT,
				source_trace_id       TEXT NOT NULL,
				source_observation_id TEXT NOT NULL,
				created_at            BIGINT NOT NULL,
				deleted               INTEGER NOT NULL,
				PRIMARY KEY (project_id, item_id, valid_from)
			)`,
			`CREATE INDEX dataset_item_versions_dataset ON dataset_item_versions (dataset_id, valid_from)`,
			// Items stored before versions existed are known from their last change.
			`INSERT INTO dataset_item_versions (project_id, item_id, valid_from, dataset_id, status, input, expected_output,
				metadata, source_trace_id, source_observation_id, created_at, deleted)
			SELECT project_id, id, updated_at, dataset_id, status, input, expected_output, metadata,
				source_trace_id, source_observation_id, created_at, 0 FROM dataset_items`,
			// The dataset version a run item was made against, when given.
			`ALTER TABLE dataset_run_items ADD COLUMN dataset_version BIGINT`,
		},
	},
	{
		version: 46,
		name:    "llm connection adapters, config and default models",
		stmts: []string{
			`ALTER TABLE llm_connections DROP CONSTRAINT llm_connections_adapter_check`,
			`ALTER TABLE llm_connections ADD CONSTRAINT llm_connections_adapter_check
				CHECK (adapter IN ('openai', 'anthropic', 'azure', 'bedrock', 'google-vertex-ai', 'google-ai-studio'))`,
			`ALTER TABLE llm_connections ADD COLUMN with_default_models INTEGER NOT NULL DEFAULT 1`,
			// config is the adapter's settings as a JSON object.
			`ALTER TABLE llm_connections ADD COLUMN config TEXT NOT NULL DEFAULT '{}'`,
		},
		sqlite: []string{
			`ALTER TABLE llm_connections ADD COLUMN with_default_models INTEGER NOT NULL DEFAULT 1`,
			`ALTER TABLE llm_connections ADD COLUMN config TEXT NOT NULL DEFAULT '{}'`,
		},
		// SQLite cannot alter a CHECK, and rebuilding the table would break
		// the rules' and experiments' foreign keys to it. Widening a CHECK
		// leaves every stored row valid, so the schema text is edited, the
		// procedure SQLite documents for such changes.
		sqliteSchema: []schemaEdit{{table: "llm_connections",
			old: `CHECK (adapter IN ('openai', 'anthropic'))`,
			new: `CHECK (adapter IN ('openai', 'anthropic', 'azure', 'bedrock', 'google-vertex-ai', 'google-ai-studio'))`}},
	},
	{
		version: 47,
		name:    "automations",
		stmts: []string{
			// Webhooks on prompt-version events. The custom headers and the
			// signing secret are sealed with the encryption key, bound to the
			// id and URL; header_keys lists the header names for display.
			`CREATE TABLE automations (
				id             TEXT PRIMARY KEY,
				project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
				name           TEXT NOT NULL,
				events         TEXT NOT NULL,
				url            TEXT NOT NULL,
				header_keys    TEXT NOT NULL,
				sealed_headers TEXT NOT NULL,
				sealed_secret  TEXT NOT NULL,
				display_secret TEXT NOT NULL,
				active         INTEGER NOT NULL,
				created_at     BIGINT NOT NULL,
				updated_at     BIGINT NOT NULL,
				UNIQUE (project_id, name)
			)`,
			// The outbox and the delivery log in one: a prompt change writes
			// a PENDING row per subscribed automation in its own transaction;
			// a worker leases it, sends it and records the outcome.
			`CREATE TABLE automation_deliveries (
				id              TEXT PRIMARY KEY,
				project_id      TEXT NOT NULL,
				automation_id   TEXT NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
				event_id        TEXT NOT NULL,
				event_type      TEXT NOT NULL,
				payload         TEXT NOT NULL,
				status          TEXT NOT NULL CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
				attempts        INTEGER NOT NULL,
				status_code     INTEGER,
				error           TEXT NOT NULL,
				next_attempt_at BIGINT NOT NULL,
				lease_owner     TEXT,
				lease_until     BIGINT,
				created_at      BIGINT NOT NULL,
				updated_at      BIGINT NOT NULL,
				delivered_at    BIGINT
			)`,
			`CREATE INDEX automation_deliveries_due ON automation_deliveries (status, next_attempt_at)`,
			`CREATE INDEX automation_deliveries_automation ON automation_deliveries (automation_id, created_at)`,
		},
	},
	{
		version: 48,
		name:    "alerts",
		stmts: []string{
			// query and denominator are the metrics queries as clients sent
			// them (JSON), checked by the metrics engine when saved. The lease
			// columns keep an alert on one evaluating server at a time.
			`CREATE TABLE alerts (
				id                TEXT PRIMARY KEY,
				project_id        TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
				name              TEXT NOT NULL,
				query             TEXT NOT NULL,
				denominator       TEXT,
				operator          TEXT NOT NULL CHECK (operator IN ('>', '>=', '<', '<=')),
				threshold         DOUBLE PRECISION NOT NULL,
				window_seconds    BIGINT NOT NULL,
				interval_seconds  BIGINT NOT NULL,
				for_count         INTEGER NOT NULL,
				target_url        TEXT NOT NULL,
				target_format     TEXT NOT NULL CHECK (target_format IN ('json', 'slack')),
				paused            INTEGER NOT NULL,
				state             TEXT NOT NULL,
				state_since       BIGINT NOT NULL,
				breaches          INTEGER NOT NULL,
				last_value        DOUBLE PRECISION,
				last_evaluated_at BIGINT,
				last_error        TEXT NOT NULL,
				next_eval_at      BIGINT NOT NULL,
				lease_owner       TEXT NOT NULL,
				lease_until       BIGINT NOT NULL,
				created_at        BIGINT NOT NULL,
				updated_at        BIGINT NOT NULL
			)`,
			`CREATE INDEX alerts_project ON alerts (project_id, created_at)`,
			`CREATE INDEX alerts_due ON alerts (next_eval_at)`,
			`CREATE TABLE alert_history (
				id           TEXT PRIMARY KEY,
				alert_id     TEXT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
				project_id   TEXT NOT NULL,
				at           BIGINT NOT NULL,
				from_state   TEXT NOT NULL,
				to_state     TEXT NOT NULL,
				value        DOUBLE PRECISION,
				notification TEXT NOT NULL
			)`,
			`CREATE INDEX alert_history_alert ON alert_history (alert_id, at)`,
		},
	},
	{
		version: 49,
		name:    "organization retention",
		stmts: []string{
			// Projects that set no retention take their organization's.
			`ALTER TABLE organizations ADD COLUMN retention_days INTEGER NOT NULL DEFAULT 0`,
			`INSERT INTO change_versions (kind, version) VALUES ('retention', 0)`,
		},
	},
}

// migrate applies pending migrations in one transaction. On PostgreSQL an
// advisory transaction lock makes concurrent openers wait for each other; on
// SQLite the immediate transaction holds the write lock for the same effect.
func (s *Store) migrate(ctx context.Context) error {
	err := s.inTx(ctx, func(c conn) error {
		if s.postgres {
			if _, err := c.exec(ctx, `SELECT pg_advisory_xact_lock(?)`, migrationLock); err != nil {
				return fmt.Errorf("take migration lock: %w", err)
			}
		}
		if _, err := c.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    BIGINT PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at BIGINT NOT NULL
		)`); err != nil {
			return err
		}
		applied, err := appliedVersions(ctx, c)
		if err != nil {
			return err
		}
		latest := migrations[len(migrations)-1].version
		for v := range applied {
			if v > latest {
				return fmt.Errorf("database schema version %d is newer than this build knows (%d)", v, latest)
			}
		}
		for _, m := range migrations {
			if applied[m.version] {
				continue
			}
			stmts := m.stmts
			if !s.postgres && m.sqlite != nil {
				stmts = m.sqlite
			}
			for _, stmt := range stmts {
				if _, err := c.exec(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
				}
			}
			if !s.postgres && len(m.sqliteSchema) > 0 {
				if err := editSQLiteSchema(ctx, c, m.sqliteSchema); err != nil {
					return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
				}
			}
			if _, err := c.exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, s.micros()); err != nil {
				return fmt.Errorf("record migration %d: %w", m.version, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate control plane: %w", err)
	}
	return nil
}

func appliedVersions(ctx context.Context, c conn) (map[int64]bool, error) {
	rows, err := c.query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := map[int64]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}
