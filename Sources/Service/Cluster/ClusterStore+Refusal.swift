import Foundation
import PostgresNIO

/// Instances that are not alike: each machine has its own disk (its own `--output-root` and
/// `--media-root`), so a job's paths are stored relative to the roots and resolved where it
/// runs. A job an instance still cannot run there (a file only another's disk holds) is
/// refused and released for the others, not failed; one that every live instance refused fails
/// with each one's reason (docs/cluster.md, different roots).
extension ClusterStore {
    enum Refusal: Sendable, Equatable {
        /// Back in the queue for an instance that has not refused it.
        case released
        /// Every live instance refused it: failed with this error.
        case failed(String)
        /// No longer this instance's (taken over, ended): nothing written.
        case notHeld
    }

    /// Job `id`, which this instance claimed and cannot start, with `reason`: released for the
    /// others (its claims skip it here from now on), or failed if each live instance has now
    /// refused it. One transaction under the row's lock, so two refusing at once cannot both
    /// release a job that neither can run.
    func refuse(_ id: String, reason: String, grace: Duration) async throws -> Refusal {
        let life = lifecycle(grace: grace)
        return try await client.withTransaction(logger: log) { connection -> Refusal in
            guard let (job, now) = try await locked(id, connection), job.owner == instance, job.state.isHeld else { return .notHeld }
            let refused = try await connection.query("""
                UPDATE jobs SET refused = refused || jsonb_build_object(\(instance)::text, \(reason)::text) WHERE id = \(id) RETURNING refused::text
                """, logger: log).collect().first?.decode(String.self) ?? "{}"
            let reasons = (try? JSONDecoder().decode([String: String].self, from: Data(refused.utf8))) ?? [instance: reason]
            let live = try await connection.query("SELECT DISTINCT instance FROM instance_sessions WHERE gone_since IS NULL", logger: log)
                .collect().map { try $0.decode(String.self) }
            if live.contains(where: { reasons[$0] == nil }) {
                guard case .apply(let step) = life.decide(.release, job, at: now) else { return .notHeld }
                try await apply(step, to: id, connection)
                return .released
            }
            let error = "no instance can run it: " + reasons.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; ")
            guard case .apply(let step) = life.decide(.end(.failed), job, at: now) else { return .notHeld }
            try await apply(step, to: id, ending: Ending(ended: Date(), error: error, cause: "refused"), connection)
            return .failed(error)
        }
    }

    /// An instance (re)starting may have been given the roots or files it lacked: the jobs
    /// waiting are its to try again.
    func forgetRefusals() async throws {
        try await client.query("UPDATE jobs SET refused = refused - \(instance)::text WHERE state = 'queued' AND refused ? \(instance)::text", logger: log)
    }

    /// What an instance runs jobs with, compared across the cluster.
    struct Settings: Sendable, Equatable {
        var outputRoot: String
        var mediaRoot: String
        /// The signing key's fingerprint; nil: recordings unsigned.
        var signer: String?
        /// `--storage` (where finished recordings go); nil: kept on the instance's disk.
        var storage: String? = nil
        /// `--janus-allow`, sorted.
        var janusAllow: [String] = []
    }

    /// Records this instance's settings and answers how each other instance's differ, one
    /// sentence each (empty: all alike).
    func register(_ mine: Settings) async throws -> [String] {
        let allow = mine.janusAllow.joined(separator: " ")
        try await client.query("""
            INSERT INTO instances (instance, output_root, media_root, signer, storage, janus_allow)
                VALUES (\(instance), \(mine.outputRoot), \(mine.mediaRoot), \(mine.signer), \(mine.storage), \(allow))
            ON CONFLICT (instance) DO UPDATE SET output_root = EXCLUDED.output_root, media_root = EXCLUDED.media_root,
                signer = EXCLUDED.signer, storage = EXCLUDED.storage, janus_allow = EXCLUDED.janus_allow, started = now()
            """, logger: log)
        let rows = try await client.query("""
            SELECT instance, output_root, media_root, signer, storage, janus_allow FROM instances WHERE instance <> \(instance) ORDER BY instance
            """, logger: log)
        var differences: [String] = []
        for try await (other, output, media, signer, storage, janus) in rows.decode((String, String, String, String?, String?, String).self) {
            var what: [String] = []
            if output != mine.outputRoot { what.append("--output-root \(output) (here \(mine.outputRoot))") }
            if media != mine.mediaRoot { what.append("--media-root \(media) (here \(mine.mediaRoot))") }
            if signer != mine.signer { what.append("signing key \(signer ?? "none") (here \(mine.signer ?? "none"))") }
            if storage != mine.storage { what.append("--storage \(storage ?? "none") (here \(mine.storage ?? "none"))") }
            if janus != allow { what.append("--janus-allow \(janus.isEmpty ? "none" : janus) (here \(allow.isEmpty ? "none" : allow))") }
            if !what.isEmpty { differences.append("instance \(other) has " + what.joined(separator: ", ")) }
        }
        return differences
    }
}
