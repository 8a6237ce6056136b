extension ClusterMigrations {
    /// A recording's uploads moved onto `tasks` (issue 41 item 4): each row of `job_uploads`
    /// (step 5) a task of kind `upload`, keyed by its object key, pinned to its uploader (the
    /// merged manifest, inline in `payload`, to none), its file's facts and its verified object
    /// in `args`; pending is `available` (a running cluster's pending files are worked by the
    /// instance they were pinned to, or taken over as before), uploaded `completed` (its
    /// successful try counted, as the queue counts it), missing `discarded`. The table dropped.
    static let uploadSteps: [(version: Int, sql: [String])] = [
        (12, [
            """
            INSERT INTO tasks (kind, key, job_id, pinned_to, args, payload, state, attempts, run_at, created, queued_by, last_error, finished)
            SELECT 'upload', key, job_id, CASE WHEN content IS NULL THEN uploader END,
                jsonb_strip_nulls(jsonb_build_object('name', name, 'file', file, 'folder', folder_id, 'size', size::text, 'sha256', sha256,
                                                     'object', object::text, 'by', CASE WHEN state = 'uploaded' THEN uploader END)),
                content,
                CASE state WHEN 'pending' THEN 'available' WHEN 'uploaded' THEN 'completed' ELSE 'discarded' END::task_state,
                attempts + CASE WHEN state = 'uploaded' THEN 1 ELSE 0 END, now(), updated, uploader, last_error,
                CASE WHEN state <> 'pending' THEN updated END
            FROM job_uploads ORDER BY job_id, key
            ON CONFLICT (kind, key) DO NOTHING
            """,
            "DROP TABLE job_uploads",
            "CREATE INDEX tasks_job ON tasks (job_id, kind)",
        ]),
    ]
}
