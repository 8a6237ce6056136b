import Logging
import PostgresNIO

/// The cluster's schema, one numbered step at a time (docs/cluster.md shows the result). A
/// step is never edited once released: a change is a new step. Each runs in a transaction with
/// its row in `schema_migrations`, under an advisory lock so that instances starting together
/// apply each step once.
enum ClusterMigrations {
    static let steps: [(version: Int, sql: [String])] = [
        (1, [
            """
            CREATE TABLE jobs (
                id text PRIMARY KEY,
                kind text NOT NULL,
                spec jsonb NOT NULL,
                out_folder text,
                created timestamptz NOT NULL,
                resumes integer NOT NULL DEFAULT 0,
                owner text,
                lease_until timestamptz,
                stop_requested boolean NOT NULL DEFAULT false,
                final_state text,
                ended timestamptz,
                error text,
                status jsonb
            )
            """,
            // The claim's scan: active jobs, oldest first.
            "CREATE INDEX jobs_active ON jobs (created) WHERE final_state IS NULL",
            // One active recording per folder, across every instance.
            "CREATE UNIQUE INDEX jobs_out_active ON jobs (out_folder) WHERE final_state IS NULL AND out_folder IS NOT NULL",
            """
            CREATE TABLE job_owners (
                job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
                seq integer NOT NULL,
                owner text NOT NULL,
                cause text NOT NULL,
                started timestamptz NOT NULL,
                ended timestamptz,
                end_cause text,
                PRIMARY KEY (job_id, seq)
            )
            """,
        ]),
        // Where a playback is in its file, kept with each renewal: the next owner starts there.
        (2, ["ALTER TABLE jobs ADD COLUMN position_seconds double precision"]),
        // A recording's proof chain head (ChainLink: checkpoint, hash, time), kept with each
        // renewal: the next owner's first checkpoint links to it.
        (3, ["ALTER TABLE jobs ADD COLUMN chain_head jsonb"]),
        // Each instance's own database session (ClusterLiveness): a session-level advisory lock
        // on `key` while it lives. A job names the session it was claimed under; once that
        // session has been seen gone for the takeover grace, the job is taken without waiting
        // for its lease.
        (4, [
            """
            CREATE TABLE instance_sessions (
                key bigint PRIMARY KEY,
                instance text NOT NULL,
                started timestamptz NOT NULL DEFAULT now(),
                gone_since timestamptz
            )
            """,
            "CREATE INDEX instance_sessions_live ON instance_sessions (key) WHERE gone_since IS NULL",
            "ALTER TABLE jobs ADD COLUMN owner_session bigint",
        ]),
        // A recording's files on their way to the store, known to every instance: who uploads
        // each (and under which session: a dead uploader's files are taken by another), and
        // how far it got. `content`: a file kept in the uploader's state directory (the merged
        // manifest), which no other instance could read. A recording's folders (`folder_id`,
        // the `.sfubot-folder` marker: one for every owner on shared storage, one per disk
        // otherwise), each queued once by the instance holding it, with its manifest for the
        // merged one, or given up by an operator (`abandoned`: why, its disk being gone).
        // `uploads_finished`: set once, by the instance that settled the last file.
        (5, [
            """
            CREATE TABLE job_uploads (
                job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
                key text NOT NULL,
                name text NOT NULL,
                file text NOT NULL,
                content text,
                folder_id text,
                size bigint,
                sha256 text,
                uploader text NOT NULL,
                uploader_session bigint,
                state text NOT NULL DEFAULT 'pending',
                object jsonb,
                attempts integer NOT NULL DEFAULT 0,
                last_error text,
                updated timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (job_id, key)
            )
            """,
            "CREATE INDEX job_uploads_pending ON job_uploads (uploader_session) WHERE state = 'pending'",
            """
            CREATE TABLE job_folders (
                job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
                folder_id text NOT NULL,
                queued_by text NOT NULL,
                folder text NOT NULL,
                manifest text,
                prefix text NOT NULL,
                abandoned text,
                queued timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (job_id, folder_id)
            )
            """,
            "ALTER TABLE job_owners ADD COLUMN folder_id text",
            "ALTER TABLE jobs ADD COLUMN uploads_finished timestamptz",
        ]),
        // A job's state named (JobLifecycle, docs/cluster.md: the diagram), backfilled from the
        // columns it was derived from, with CHECK constraints tying those columns to it.
        (6, [
            "CREATE TYPE job_state AS ENUM ('queued', 'running', 'paused', 'stopping', 'uploading', 'done', 'failed')",
            "ALTER TABLE jobs ADD COLUMN state job_state",
            """
            UPDATE jobs j SET state = CASE
                WHEN final_state IS NOT NULL AND uploads_finished IS NULL
                    AND EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = j.id AND o.folder_id IS NOT NULL) THEN 'uploading'
                WHEN final_state IS NOT NULL THEN final_state::job_state
                WHEN stop_requested THEN 'stopping'
                WHEN owner IS NULL OR lease_until IS NULL THEN 'queued'
                WHEN coalesce((status->>'paused')::boolean, false) THEN 'paused'
                ELSE 'running' END::job_state
            """,
            // Ended rows hold no lease; waiting ones no owner; an ended row always says when.
            "UPDATE jobs SET lease_until = NULL, ended = coalesce(ended, created) WHERE state IN ('uploading', 'done', 'failed')",
            "UPDATE jobs SET owner = NULL, owner_session = NULL, lease_until = NULL WHERE state = 'queued'",
            "UPDATE jobs SET owner = NULL, lease_until = NULL WHERE state = 'stopping' AND (owner IS NULL OR lease_until IS NULL)",
            "ALTER TABLE jobs ALTER COLUMN state SET NOT NULL, ALTER COLUMN state SET DEFAULT 'queued'",
            """
            ALTER TABLE jobs
                ADD CONSTRAINT jobs_queued CHECK (state <> 'queued' OR (owner IS NULL AND lease_until IS NULL AND final_state IS NULL AND NOT stop_requested)),
                ADD CONSTRAINT jobs_held CHECK (state NOT IN ('running', 'paused')
                    OR (owner IS NOT NULL AND lease_until IS NOT NULL AND final_state IS NULL AND NOT stop_requested)),
                ADD CONSTRAINT jobs_stopping CHECK (state <> 'stopping' OR (final_state IS NULL AND stop_requested AND (owner IS NULL) = (lease_until IS NULL))),
                ADD CONSTRAINT jobs_uploading CHECK (state <> 'uploading' OR (final_state IS NOT NULL AND uploads_finished IS NULL)),
                ADD CONSTRAINT jobs_ended CHECK (state NOT IN ('uploading', 'done', 'failed') OR (ended IS NOT NULL AND lease_until IS NULL)),
                ADD CONSTRAINT jobs_outcome CHECK (state NOT IN ('done', 'failed') OR final_state = state::text)
            """,
            "CREATE INDEX jobs_state ON jobs (state, created) WHERE state NOT IN ('done', 'failed')",
        ]),
        // Each instance's --max-jobs with its session: a POST is admitted while the jobs not
        // ended fit in what the live instances take together (429 past it, as without --database).
        (7, ["ALTER TABLE instance_sessions ADD COLUMN max_jobs integer"]),
        // Jobs store their paths relative to the roots, each instance resolves them below its
        // own: an instance that still cannot run one (a file only another's disk holds) says
        // why in `refused` and releases it; a job every live instance refused fails. Each
        // instance's roots, signer, store and Janus allow-list, so that one starting with others'
        // different says so.
        (8, [
            "ALTER TABLE jobs ADD COLUMN refused jsonb NOT NULL DEFAULT '{}'::jsonb",
            """
            CREATE TABLE instances (
                instance text PRIMARY KEY,
                output_root text NOT NULL,
                media_root text NOT NULL,
                signer text,
                storage text,
                janus_allow text NOT NULL DEFAULT '',
                started timestamptz NOT NULL DEFAULT now()
            )
            """,
        ]),
        // The webhook outbox of every instance (ClusterStore+Webhooks): an event queued once
        // (`event_id`, the `webhook-id`, names the job, type and subject), after the job's
        // earlier ones (`seq`), delivered by whichever live instance claims it, in order per
        // job. Not tied to `jobs`: an event outlives a job pruned before it was delivered.
        (9, [
            """
            CREATE TABLE webhook_events (
                id bigserial PRIMARY KEY,
                event_id text NOT NULL UNIQUE,
                job_id text,
                seq integer NOT NULL,
                type text NOT NULL,
                body json NOT NULL,
                queued_by text NOT NULL,
                created timestamptz NOT NULL DEFAULT now(),
                attempts integer NOT NULL DEFAULT 0,
                next_attempt timestamptz NOT NULL DEFAULT now(),
                last_error text,
                claimed_by text,
                claimed_session bigint,
                claim_until timestamptz,
                delivered timestamptz,
                gave_up timestamptz,
                UNIQUE (job_id, seq)
            )
            """,
            "CREATE INDEX webhook_events_due ON webhook_events (next_attempt) WHERE delivered IS NULL AND gave_up IS NULL",
        ]),
        // One queue of follow-on work (issue 41 item 4; ClusterStore+Tasks, TaskPolicy,
        // docs/cluster.md): a row per task, queued once per (kind, key), in the transaction of
        // the change that causes it; `seq` orders a job's tasks of one kind (each waits for the
        // ones before it to finish); `pinned_to` names the only instance that may work it (the
        // one whose disk holds its files). CHECK constraints tie the claim and the end to `state`.
        (10, [
            "CREATE TYPE task_state AS ENUM ('available', 'running', 'completed', 'discarded')",
            """
            CREATE TABLE tasks (
                id bigserial PRIMARY KEY,
                kind text NOT NULL CHECK (kind <> ''),
                key text NOT NULL,
                job_id text,
                seq integer,
                pinned_to text,
                args jsonb NOT NULL DEFAULT '{}'::jsonb,
                payload text,
                state task_state NOT NULL DEFAULT 'available',
                attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                run_at timestamptz NOT NULL DEFAULT now(),
                created timestamptz NOT NULL DEFAULT now(),
                queued_by text NOT NULL,
                last_error text,
                claimed_by text,
                claimed_session bigint,
                claim_until timestamptz,
                finished timestamptz,
                UNIQUE (kind, key),
                UNIQUE (kind, job_id, seq),
                CONSTRAINT tasks_ordered CHECK (seq IS NULL OR job_id IS NOT NULL),
                CONSTRAINT tasks_claimed CHECK ((state = 'running') = (claimed_by IS NOT NULL AND claim_until IS NOT NULL)),
                CONSTRAINT tasks_unclaimed CHECK (state = 'running' OR claimed_session IS NULL),
                CONSTRAINT tasks_finished CHECK ((state IN ('completed', 'discarded')) = (finished IS NOT NULL))
            )
            """,
            "CREATE INDEX tasks_due ON tasks (run_at) WHERE state = 'available'",
            "CREATE INDEX tasks_running ON tasks (claim_until) WHERE state = 'running'",
        ]),
        // The webhook outbox (step 9) moved onto `tasks`, kind `webhook`: its rows kept (a claim
        // in flight made available again: sent at least once), its table dropped.
        (11, [
            """
            INSERT INTO tasks (kind, key, job_id, seq, args, payload, state, attempts, run_at, created, queued_by, last_error, finished)
            SELECT 'webhook', event_id, job_id, CASE WHEN job_id IS NOT NULL THEN seq END, jsonb_build_object('type', type), body::text,
                CASE WHEN delivered IS NOT NULL THEN 'completed' WHEN gave_up IS NOT NULL THEN 'discarded' ELSE 'available' END::task_state,
                attempts, next_attempt, created, queued_by, last_error, coalesce(delivered, gave_up)
            FROM webhook_events ORDER BY id
            """,
            "DROP TABLE webhook_events",
        ]),
    ] + uploadSteps

    /// Brings the database to the newest step; returns the steps applied now.
    static func run(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        var applied: [Int] = []
        for step in steps {
            let done = try await client.withTransaction(logger: logger) { connection -> Bool in
                // Held to the transaction's end: a second instance waits, then sees the row.
                try await connection.query("SELECT pg_advisory_xact_lock(727274)", logger: logger)
                // Under the lock: two CREATE TABLE IF NOT EXISTS at once can still collide.
                try await connection.query("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())", logger: logger)
                let rows = try await connection.query("SELECT 1 FROM schema_migrations WHERE version = \(step.version)", logger: logger).collect()
                guard rows.isEmpty else { return false }
                for sql in step.sql { try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
                try await connection.query("INSERT INTO schema_migrations (version) VALUES (\(step.version))", logger: logger)
                return true
            }
            if done { applied.append(step.version) }
        }
        return applied
    }
}
