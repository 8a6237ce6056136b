import Bot
import FrameCrypto
@testable import Service
import Foundation
import Logging
import Testing
import TestSupport

/// `JobManager` on a `ClusterStore` (two instances' managers on one database, the real
/// PostgreSQL), with fake jobs instead of recorders and players: what the manager decides in a
/// cluster that the store alone does not show. No Janus, no media, no serve process; leases and
/// sessions back-dated in the rows (ClusterStoreTests).
@Suite(.serialized) struct ClusterManagerTests {
    /// A manager of instance `store.instance` on `store`, its roots and state below `dir`. Its
    /// lease is 80 s, so its takeover grace (3/8 of it) is ClusterStoreTests.grace.
    static func manager(_ dir: URL, _ store: ClusterStore, publishing: JobPublishing? = nil, allow: [String] = ["ws://127.0.0.1:9"]) throws -> JobManager {
        let base = dir.appendingPathComponent("serve-\(store.instance)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        let token = base.appendingPathComponent("token")
        try Data("0123456789abcdef0123".utf8).write(to: token)
        chmod(token.path, 0o600)
        var log = Logger(label: "test.cluster-manager")
        log.logLevel = .warning
        let roots = Roots(output: try Root(base.appendingPathComponent("out").path, use: .output, create: true),
                          media: try Root(base.appendingPathComponent("media").path, use: .media, create: true))
        var config = ServeConfiguration(host: "127.0.0.1", port: 0, tokens: try TokenFile(path: token.path, logger: log),
                                        roots: roots, janus: allow[0], janusAllowed: try JanusAllowList(allow),
                                        stateDirectory: base.appendingPathComponent("state"), pipelines: try PipelineLibrary(), logger: log)
        var cluster = ClusterOptions(database: "postgres://sfubot@127.0.0.1/unused", instanceID: store.instance)
        cluster.lease = .seconds(80)
        config.cluster = cluster
        config.publishing = publishing
        return JobManager(config: config, store: store)
    }

    /// A recording in SFrame frames (keys by index handed in while it runs), its own shared key `shared`.
    static func sframe(shared: String) throws -> JobSpec {
        try JobSpec.parse(Data(#"{"room": 1234, "out": "rec", "key": {"hex": "\#(shared)"}, "format": {"frame": "sframe"}}"#.utf8), kind: .recording)
    }

    /// A running job with an empty key store of its own (as a run of the request starts), doing nothing until stopped.
    static func keyed(_ id: String, _ spec: JobSpec, resumes: Int) -> Job {
        let job = Job(id: id, spec: spec, created: Date(), resumes: resumes, live: LiveStatus(), sent: nil,
                      pause: JobPause(.recording, resuming: nil), keys: FrameKeyStore(format: SFrameFormat()))
        job.start {
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
            return .init(state: .done, ended: Date(), error: nil)
        }
        return job
    }

    static func answer(_ call: () async throws(RequestProblem) -> Void) async -> RequestProblem? {
        do { try await call() } catch { return error }
        return nil
    }

    @Test("POST …/keys with --database: the owner takes the key, the other instance answers 409 naming the owner; no table holds it; after the owner's death the new owner (its run with the request's keys only) takes it again; once ended, 409")
    func keysGoToTheOwnerOnly() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "keys")
            defer { t.close() }
            let dir = try Scene.tempDirectory("cluster-keys")
            defer { try? FileManager.default.removeItem(at: dir) }
            let shared = String(repeating: "0f", count: 16)
            let spec = try Self.sframe(shared: shared)
            try await t.a.insert(id: "rec-1", spec: spec, created: Date())
            _ = try #require(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace))
            let onA = try Self.manager(dir, t.a), onB = try Self.manager(dir, t.b)
            let first = Self.keyed("rec-1", spec, resumes: 0)
            await onA.adopt(first)
            let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            let line = Data(#"{"participant": "5", "index": 1, "key": "\#(hex)"}"#.utf8)

            let refused = await Self.answer { () throws(RequestProblem) in try await onB.handKey("rec-1", kind: .recording, line) }
            #expect(refused?.status == 409 && refused?.message.contains("runs on instance a") == true, "\(String(describing: refused))")
            #expect(await Self.answer { () throws(RequestProblem) in try await onA.handKey("rec-1", kind: .recording, line) } == nil, "the owner takes it (204)")
            #expect(first.keys?.summary.participants == ["5": [1]])
            // Every row of every table, as text: the handed-in key is in none; the request's own key is kept with the job.
            await onA.persistNow("rec-1")
            for table in ["jobs", "job_owners", "tasks", "instance_sessions", "instances"] {
                #expect(try await t.sql("SELECT count(*) FROM \(table) r WHERE r::text ILIKE '%\(hex)%'") == "0", "\(table) holds the handed-in key")
            }
            #expect(try await t.sql("SELECT count(*) FROM jobs WHERE spec::text LIKE '%\(shared)%'") == "1")

            // a dies (its lease back-dated): b takes the job, its run has the request's keys only, and takes the key handed again.
            _ = try await t.sql("UPDATE jobs SET lease_until = now() - interval '10 ms' WHERE id = 'rec-1'")
            let taken = try #require(try await t.b.claim(session: 2, grace: ClusterStoreTests.grace))
            #expect(taken.previous == "a")
            let second = Self.keyed("rec-1", spec, resumes: taken.row.resumes)
            await onB.adopt(second)
            #expect(second.keys?.summary.participants.isEmpty == true)
            #expect(await Self.answer { () throws(RequestProblem) in try await onB.handKey("rec-1", kind: .recording, line) } == nil, "the new owner takes it")
            #expect(second.keys?.summary.participants == ["5": [1]])

            let stopped = try await onB.stop("rec-1")
            #expect(stopped.state == "done")
            let gone = await Self.answer { () throws(RequestProblem) in try await onB.handKey("rec-1", kind: .recording, line) }
            #expect(gone?.status == 409 && gone?.message.contains("ended") == true, "\(String(describing: gone))")
            await first.stop()
        }
    }

    @Test("a job through a Janus only a allows: b claims it, refuses it (its --janus-allow) and releases it, its reason kept, not failed; a takes it")
    func aJobOneInstanceMayNotRunGoesToTheOther() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "janusallow")
            defer { t.close() }
            let dir = try Scene.tempDirectory("cluster-janus-allow")
            defer { try? FileManager.default.removeItem(at: dir) }
            var spec = ClusterStoreTests.spec
            spec.janus = "ws://localhost:9"
            try await t.a.insert(id: "rec-1", spec: spec, created: Date())
            let onB = try Self.manager(dir, t.b, allow: ["ws://127.0.0.1:9"])
            await onB.useSession(2)
            await onB.claimAvailable(t.b)

            #expect(try await t.sql("SELECT refused->>'b' FROM jobs WHERE id = 'rec-1'").contains("not a Janus this instance may use"))
            #expect(try await t.state("rec-1") == "queued", "released, not failed: a has not refused it")
            #expect(try await t.sql("SELECT string_agg(owner || ':' || coalesce(end_cause, '-'), ',' ORDER BY seq) FROM job_owners") == "b:released")
            #expect(try await onB.status("rec-1").owners?.map(\.instance) == ["b"])
            await onB.claimAvailable(t.b)
            #expect(try await t.state("rec-1") == "queued", "b does not take it again")
            let taken = try #require(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace))
            #expect(taken.row.id == "rec-1" && taken.row.state == .running)
            #expect(try await t.sql("SELECT string_agg(owner, ',' ORDER BY seq) FROM job_owners") == "b,a")
        }
    }
}

extension JobManager {
    /// This instance's database session, as `ClusterLiveness` reports it up.
    func useSession(_ session: Int64) { liveSession = session }

    /// The job's status published as its renewal does.
    func persistNow(_ id: String) async {
        guard let job = jobs[id], let store = store as? ClusterStore else { return }
        try? await store.publish(JobStatus(job))
    }
}
