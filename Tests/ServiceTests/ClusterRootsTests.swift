import Bot
@testable import Service
import Foundation
import Testing
import TestSupport

/// Instances that are not alike (issue 39, item 4): each machine its own disk. A job's paths
/// are stored relative to the roots; an instance that claimed a job it cannot run releases it
/// for the others; a job every live instance refused fails with each reason; instances whose
/// roots or signer differ are told at start. Against the real PostgreSQL, rows back-dated or
/// set, no Janus.
@Suite(.serialized) struct ClusterRootsTests {
    typealias Two = ClusterStoreTests.Two

    @Test("refused by a: released, a's claims skip it, b takes it; refused by b too: failed naming both reasons, one history")
    func refusedThenFailed() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "refusal")
            defer { t.close() }
            try await t.a.insert(id: "play-1", spec: ClusterStoreTests.spec, created: Date())
            _ = try #require(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace))

            let first = try await t.a.refuse("play-1", reason: "file: tone.wav does not exist", grace: ClusterStoreTests.grace)
            #expect(first == .released)
            #expect(try await t.state("play-1") == "queued")
            #expect(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace) == nil, "a refused it: a does not take it again")
            let taken = try #require(try await t.b.claim(session: 2, grace: ClusterStoreTests.grace))
            #expect(taken.row.id == "play-1" && taken.row.state == .running)
            // Only its owner refuses it.
            #expect(try await t.a.refuse("play-1", reason: "again", grace: ClusterStoreTests.grace) == .notHeld)

            let second = try await t.b.refuse("play-1", reason: "file: tone.wav is not a regular file", grace: ClusterStoreTests.grace)
            let error = "no instance can run it: a: file: tone.wav does not exist; b: file: tone.wav is not a regular file"
            #expect(second == .failed(error))
            #expect(try await t.state("play-1") == "failed")
            #expect(try await t.sql("SELECT error FROM jobs WHERE id = 'play-1'") == error)
            #expect(try await t.sql("SELECT string_agg(owner || ':' || coalesce(end_cause, '-'), ',' ORDER BY seq) FROM job_owners")
                    == "a:released,b:refused")
        }
    }

    @Test("an instance gone does not hold a job up: refused by the only live one, it fails; a restart forgets its own refusals")
    func onlyLiveInstancesCount() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "refusallive")
            defer { t.close() }
            try await t.a.insert(id: "rec-1", spec: ClusterStoreTests.spec, created: Date())
            try await t.a.insert(id: "rec-2", spec: ClusterStoreTests.spec, created: Date().addingTimeInterval(1))
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() WHERE instance = 'b'")
            _ = try #require(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace))
            #expect(try await t.a.refuse("rec-1", reason: "out: outside --output-root", grace: ClusterStoreTests.grace)
                    == .failed("no instance can run it: a: out: outside --output-root"))

            // b back: a refuses rec-2, so it waits for b; a restarted is given its chance again.
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = NULL WHERE instance = 'b'")
            _ = try #require(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace))
            #expect(try await t.a.refuse("rec-2", reason: "no room", grace: ClusterStoreTests.grace) == .released)
            #expect(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace) == nil)
            try await t.a.forgetRefusals()
            #expect(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace)?.row.id == "rec-2")
        }
    }

    @Test("instances register their roots and signer; the one starting is told how each other differs")
    func differencesAreNamed() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "instances")
            defer { t.close() }
            let same = ClusterStore.Settings(outputRoot: "/srv/rec", mediaRoot: "/srv/media", signer: "ab12")
            #expect(try await t.a.register(same) == [])
            #expect(try await t.b.register(same) == [], "alike: nothing to say")
            var other = same
            other.outputRoot = "/data/rec"
            other.signer = nil
            let told = try await t.b.register(other)
            #expect(told == ["instance a has --output-root /srv/rec (here /data/rec), signing key ab12 (here none)"])
            // a, restarting, hears about b's as recorded.
            #expect(try await t.a.register(same) == ["instance b has --output-root /data/rec (here /srv/rec), signing key none (here ab12)"])
            var third = same
            third.storage = "s3://calls/rec at http://127.0.0.1:9000"
            third.janusAllow = ["ws://127.0.0.1:8188"]
            let thirdTold = try await t.b.register(third)
            #expect(thirdTold == ["instance a has --storage none (here s3://calls/rec at http://127.0.0.1:9000), --janus-allow none (here ws://127.0.0.1:8188)"])
        }
    }

    @Test("a job's paths are stored relative to the roots and resolved below each instance's own")
    func pathsRelativeToEachRoot() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-roots-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        func roots(_ name: String) throws -> Roots {
            Roots(output: try Root(base.appendingPathComponent("\(name)-rec").path, use: .output, create: true),
                  media: try Root(base.appendingPathComponent("\(name)-media").path, use: .media, create: true))
        }
        let a = try roots("a"), b = try roots("b")
        var spec = ClusterStoreTests.spec
        spec.out = a.output.path + "/team/call-1"
        spec.mix = "team/call-1.opus"
        let stored = try JobPaths(spec, roots: a).rootRelativeSpec(spec)
        #expect(stored.out == "team/call-1" && stored.mix == "team/call-1.opus")
        // b runs it below its own root (before: "outside --output-root", failed at once).
        let onB = try JobPaths(stored, roots: b)
        #expect(onB.claims(b) == [b.output.path + "/team/call-1", b.output.path + "/team/call-1.opus"])
        // An absolute path of another root is still refused: nothing outside a root is opened.
        #expect(throws: RequestProblem.self) { try JobPaths(spec, roots: b) }
    }
}
