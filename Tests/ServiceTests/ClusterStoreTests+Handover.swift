import Bot
@testable import Service
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing
import TestSupport

/// What the end-to-end cluster tests checked with Janus and media, at the store's level: a
/// stop or pause reaching the owner by NOTIFY, a paused job and a playback's position carried
/// to the next owner, the owner's own session lost (fenced at once, taken before its lease
/// runs out), migrations run by two instances at once, no cancel key in the log.
extension ClusterStoreTests {
    /// Notifications on the jobs' channel, as an instance's LISTEN loop receives them
    /// (JobManager+Cluster), with when each came.
    final class Listener: Sendable {
        let notes = Mutex<[(payload: String, at: ContinuousClock.Instant)]>([])
        private let task = Mutex<Task<Void, Never>?>(nil)

        init(_ store: ClusterStore) {
            task.withLock { $0 = Task { [self] in
                try? await store.client.withConnection { connection in
                    try await connection.listen(on: ClusterStore.channel) { received in
                        for try await note in received { self.notes.withLock { $0.append((note.payload, .now)) } }
                    }
                }
            } }
        }

        /// When `payload` came, waiting up to 5 s for it.
        func arrival(of payload: String) async -> ContinuousClock.Instant? {
            _ = await eventually(within: 5) { notes.withLock { $0.contains { $0.payload == payload } } }
            return notes.withLock { $0.first { $0.payload == payload }?.at }
        }

        /// Until the LISTEN is in place: a probe sent by `store` arrives.
        func ready(_ store: ClusterStore) async throws -> Bool {
            for n in 0..<50 {
                try await store.notify("probe \(n)")
                if await eventually(within: 0.2, { notes.withLock { $0.contains { $0.payload == "probe \(n)" } } }) { return true }
            }
            return false
        }

        func close() { task.withLock { $0?.cancel() } }
    }

    @Test("a job queued wakes every instance; a DELETE or a pause asked of the non-owner reaches the owner's LISTEN within a second (issue 27: not polling); a waiting job's DELETE tells nobody")
    func stopAndPauseReachTheOwner() async throws {
        try await Self.withServer { pg in
            let t = try await Self.two(pg, "notify")
            defer { t.close() }
            let onA = Listener(t.a)
            defer { onA.close() }
            #expect(try await onA.ready(t.b), "a's LISTEN never heard b")
            try await t.b.insert(id: "rec-1", spec: Self.spec, created: Date())
            #expect(await onA.arrival(of: "new rec-1") != nil, "the POST taken by b wakes a's claim")
            _ = try #require(try await t.a.claim(session: 1, grace: Self.grace))

            let asked = ContinuousClock.now
            guard case .owner("a") = try await t.b.requestStop("rec-1", grace: Self.grace) else { Issue.record("not passed to a"); return }
            let heard = try #require(await onA.arrival(of: "stop rec-1"), "the stop never reached a")
            print("cluster store: a DELETE asked of b reached a's LISTEN \(asked.duration(to: heard)) later")
            #expect(asked.duration(to: heard) < .seconds(1))
            #expect(try await t.a.renew(["rec-1"]).stopAsked == ["rec-1"], "and its next renewal says so, should the note be lost")

            // A pause asked of b (JobManager.clusterSetPaused): the note a's LISTEN reads as one.
            try await t.a.insert(id: "rec-2", spec: Self.spec, created: Date().addingTimeInterval(1))
            _ = try #require(try await t.a.claim(session: 1, grace: Self.grace))
            let paused = ContinuousClock.now
            try await t.b.notify("pause rec-2")
            let pauseHeard = try #require(await onA.arrival(of: "pause rec-2"))
            #expect(paused.duration(to: pauseHeard) < .seconds(1))
            #expect(JobManager.pauseNote("pause rec-2").map { "\($0.0) \($0.1)" } == "rec-2 true")
            #expect(JobManager.pauseNote("resume rec-2").map { "\($0.0) \($0.1)" } == "rec-2 false")

            // Waiting, no owner: settled by whoever is asked, nobody told.
            try await t.a.insert(id: "rec-3", spec: Self.spec, created: Date().addingTimeInterval(2))
            guard case .settled = try await t.b.requestStop("rec-3", grace: Self.grace) else { Issue.record("not settled"); return }
            try await t.b.notify("probe end")
            _ = await onA.arrival(of: "probe end")
            #expect(!onA.notes.withLock { $0.contains { $0.payload == "stop rec-3" } })
        }
    }

    @Test("paused, then its owner gone: the next owner takes it paused, with the playback's position and the chain head the owner published; the history names the failover")
    func pausedAndPositionCarriedOver() async throws {
        try await Self.withServer { pg in
            let t = try await Self.two(pg, "carried")
            defer { t.close() }
            let spec = try JSONDecoder().decode(JobSpec.self, from: Data(#"{"kind": "playback", "room": 1234, "key": {"none": true}, "file": "tone.wav", "loop": false}"#.utf8))
            try await t.a.insert(id: "play-1", spec: spec, created: Date())
            _ = try #require(try await t.a.claim(session: 1, grace: Self.grace))
            guard case .apply = try await t.a.setPaused("play-1", true) else { Issue.record("pause not applied"); return }
            // The owner's renewal publishes its status and where the file is.
            let job = Job(id: "play-1", spec: spec, created: Date(), resumes: 0, live: LiveStatus(), sent: nil)
            var status = JobStatus(job)
            status.paused = true
            try await t.a.publish(status, position: 12.5)
            // a's session ended (SIGKILL, power): taken once gone for the grace, not before.
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() WHERE key = 1")
            #expect(try await t.b.claim(session: 2, grace: Self.grace) == nil)
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() - interval '31 s' WHERE key = 1")
            let taken = try #require(try await t.b.claim(session: 2, grace: Self.grace))
            #expect(taken.row.state == .paused && taken.row.status?.paused == true, "taken up paused: \(taken.row.state)")
            #expect(taken.row.position == 12.5, "from where it was: \(String(describing: taken.row.position))")
            #expect(taken.previous == "a" && !taken.expired && taken.row.resumes == 1)
            #expect(try await t.a.renew(["play-1"]).kept.isEmpty, "a, should it come back, holds it no more")
            // Resumed on b; the history as GET shows it.
            guard case .apply = try await t.b.setPaused("play-1", false) else { Issue.record("resume not applied"); return }
            #expect(try await t.state("play-1") == "running")
            let owners = try await t.b.owners(["play-1"])["play-1"] ?? []
            #expect(owners.map { "\($0.instance):\($0.cause):\($0.endCause ?? "-")" } == ["a:new:session ended", "b:failover:-"], "\(owners)")
        }
    }

    @Test("migrations run by two instances starting at once: each step applied once, both ready")
    func migrationsRunOnce() async throws {
        let (pg, name) = try await SharedPostgres.database("migrate")
        let log = {
            var log = Logger(label: "test.cluster-store")
            log.logLevel = .warning
            return log
        }()
        let clients = (0..<2).map { _ in
            PostgresClient(configuration: .init(host: "127.0.0.1", port: pg.port, username: "sfubot", password: nil, database: name, tls: .disable), backgroundLogger: log)
        }
        let running = clients.map { client in Task { await client.run() } }
        defer { running.forEach { $0.cancel() } }
        async let first = ClusterMigrations.run(clients[0], logger: log)
        async let second = ClusterMigrations.run(clients[1], logger: log)
        let applied = try await [first, second]
        let all = ClusterMigrations.steps.map(\.version)
        #expect((applied[0] + applied[1]).sorted() == all, "every step by one of them: \(applied)")
        #expect(try await pg.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations", database: name)
                == all.map(String.init).joined(separator: ","))
    }
}
