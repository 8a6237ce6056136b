import Bot
@testable import Service
import Foundation
import Logging
import Testing

/// `LocalJobStore`'s transitions, as `ClusterStoreTests` checks PostgreSQL's: a real state
/// folder and a real `JobManager`, fake jobs that append to a file instead of a recorder (no
/// Janus, no media), and a "crash" that is a second manager on the same folder.
@Suite struct LocalJobStoreTests {
    typealias Life = LocalJobStore.Lifecycle

    static let recording = try! JSONDecoder().decode(JobSpec.self, from: Data(#"{"kind": "recording", "room": 1234, "key": {"none": true}, "loop": false}"#.utf8))

    /// A state folder, roots and a manager on them; `dir` is new unless given (a restart).
    struct Instance {
        let dir: URL
        let store: LocalJobStore
        let manager: JobManager

        init(_ dir: URL? = nil) throws {
            let dir = try dir ?? {
                let made = FileManager.default.temporaryDirectory.appendingPathComponent("local-store-\(UUID().uuidString.prefix(8))")
                try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true)
                try Data("0123456789abcdef0123".utf8).write(to: made.appendingPathComponent("token"))
                chmod(made.appendingPathComponent("token").path, 0o600)
                return made
            }()
            self.dir = dir
            var log = Logger(label: "test.local-store")
            log.logLevel = .warning
            let roots = Roots(output: try Root(dir.appendingPathComponent("out").path, use: .output, create: true),
                              media: try Root(dir.appendingPathComponent("media").path, use: .media, create: true))
            var config = ServeConfiguration(host: "127.0.0.1", port: 0, tokens: try TokenFile(path: dir.appendingPathComponent("token").path, logger: log),
                                            roots: roots, janus: "ws://127.0.0.1:9", janusAllowed: try JanusAllowList(["ws://127.0.0.1:9"]),
                                            stateDirectory: dir.appendingPathComponent("state"), pipelines: try PipelineLibrary(), logger: log)
            config.keepFinished = 60
            store = try LocalJobStore(stateDirectory: config.stateDirectory, log: log)
            manager = JobManager(config: config, store: store)
        }

        /// The states on disk once every write asked so far is done; with `expected`, once they
        /// are those (a job's end is written by the task watching it), or 5 s have passed.
        func onDisk(_ expected: [String: String]? = nil) async throws -> [String: String] {
            let deadline = ContinuousClock.now + .seconds(5)
            while true {
                await store.writer?.flush()
                let records = try JobStore(stateDirectory: dir.appendingPathComponent("state")).load(logger: Logger(label: "test"))
                let states = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0.state ?? "-") })
                if expected == nil || states == expected || ContinuousClock.now > deadline { return states }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// A job that appends a line to `file` every 20 ms until it is stopped; with `hold`, its
    /// stop waits until `hold` is opened (its files still being finished).
    static func fakeJob(_ id: String, file: URL, kind: JobSpec.Kind = .recording, hold: Hold? = nil) -> Job {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let job = Job(id: id, spec: recording, created: Date(), resumes: 0, live: LiveStatus(), sent: nil, pause: JobPause(kind, resuming: nil))
        job.start {
            let handle = try? FileHandle(forWritingTo: file)
            while !Task.isCancelled {
                _ = try? handle?.seekToEnd()
                try? handle?.write(contentsOf: Data("frame\n".utf8))
                try? await Task.sleep(for: .milliseconds(20))
            }
            if let hold { await withCheckedContinuation { hold.held($0) } }
            return .init(state: .done, ended: Date(), error: nil)
        }
        return job
    }

    @Test("start: a running or paused record is taken over, a queued one claimed, a stopping one settled, an ended one listed")
    func startDecisions() throws {
        let store = try LocalJobStore(stateDirectory: nil, log: Logger(label: "test"))
        func record(_ id: String, _ state: String?, outcome: Job.Outcome? = nil, paused: Bool = false) -> JobStore.Record {
            JobStore.Record(id: id, spec: Self.recording, created: Date(), resumes: 0, outcome: outcome,
                            pauses: paused ? [RecordingManifest.Pause(start: Date())] : nil, state: state)
        }
        let ended = Job.Outcome(state: .failed, ended: Date(), error: "x")
        let planned = store.plan([record("run", "running"), record("old", nil), record("pau", "paused", paused: true), record("que", "queued"),
                                  record("que-p", "queued", paused: true), record("sto", "stopping"), record("end", "failed", outcome: ended),
                                  record("end-old", nil, outcome: ended)])
        let decided = Dictionary(uniqueKeysWithValues: planned.map { ($0.record.id, $0.decision) })
        func step(_ t: Life.Transition, _ to: Life.State, outcome: Life.Outcome? = nil) -> Life.Decision {
            .apply(.init(transition: t, to: to, owner: nil, outcome: outcome, tell: nil))
        }
        #expect(decided["run"] == step(.takeOver, .running))
        #expect(decided["old"] == step(.takeOver, .running), "a record of an older version, without state, was running")
        #expect(decided["pau"] == step(.takeOver, .paused))
        #expect(decided["que"] == step(.claim, .running))
        #expect(decided["que-p"] == step(.claim, .paused))
        #expect(decided["sto"] == step(.settleStop, .done, outcome: .done))
        #expect(decided["end"] == .unchanged && decided["end-old"] == .unchanged)
    }

    @Test("pause and resume of a running job (paused on disk before the answer), a second pause unchanged, a stop ends it done; then refused")
    func pauseResumeStop() async throws {
        let s = try Instance()
        let file = s.dir.appendingPathComponent("frames")
        let job = Self.fakeJob("rec-1", file: file)
        await s.manager.adopt(job)
        #expect(try await s.onDisk() == ["rec-1": "running"])

        let paused = try await s.manager.setPaused("rec-1", true)
        #expect(paused.paused == true && paused.pauses?.count == 1)
        #expect(try await s.onDisk() == ["rec-1": "paused"])
        let again = try await s.manager.setPaused("rec-1", true)
        #expect(again.paused == true && again.pauses?.count == 1, "unchanged: no second pause")
        let resumed = try await s.manager.setPaused("rec-1", false)
        #expect(resumed.paused == false && resumed.pauses?.count == 1)
        #expect(try await s.onDisk() == ["rec-1": "running"])

        let stopped = try await s.manager.stop("rec-1")
        #expect(stopped.state == "done")
        #expect(try await s.onDisk(["rec-1": "done"]) == ["rec-1": "done"])
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").count
        #expect(lines > 0, "the fake job wrote")
        // Stopped again: unchanged; paused once ended: refused, as in the cluster.
        #expect(try await s.manager.stop("rec-1").state == "done")
        await #expect(throws: RequestProblem(status: 409, message: "job rec-1 has ended: it cannot be paused")) { try await s.manager.setPaused("rec-1", true) }
        await #expect(throws: RequestProblem(status: 404, message: "no job rec-2")) { try await s.manager.stop("rec-2") }
        #expect(try String(contentsOf: file, encoding: .utf8).split(separator: "\n").count == lines, "nothing written after its end")
    }

    @Test("a DELETE keeps stopping on disk while its files finish; a crash then, and the next start settles it done, not resumed")
    func stoppingSurvivesACrash() async throws {
        let s = try Instance()
        let hold = Hold()
        let job = Self.fakeJob("rec-1", file: s.dir.appendingPathComponent("frames"), hold: hold)
        await s.manager.adopt(job)
        let stopping = Task { try await s.manager.stop("rec-1") }
        // Its files being finished (held): on disk it is stopping.
        let deadline = ContinuousClock.now + .seconds(5)
        while !hold.holding, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try await s.onDisk() == ["rec-1": "stopping"])
        #expect(try await s.manager.status("rec-1").state == "stopping")
        await #expect(throws: RequestProblem(status: 409, message: "job rec-1 has ended: it cannot be paused")) { try await s.manager.setPaused("rec-1", true) }

        // "Crashed": a second service on the same state folder takes up what is on disk.
        let next = try Instance(s.dir)
        let loops = await next.manager.startStore()
        #expect(loops == false, "one instance runs no loops of its store")
        let settled = try await next.manager.status("rec-1")
        #expect(settled.state == "done" && settled.resumes == 0, "\(settled.state), resumes \(settled.resumes)")
        #expect(try await next.onDisk() == ["rec-1": "done"])

        hold.open()
        _ = try await stopping.value
    }

    @Test("start takes over a running record (it runs again, or fails saying why it cannot); prune forgets ended jobs, in memory and on disk")
    func takeOverAndPrune() async throws {
        let s = try Instance()
        let gone = try JSONDecoder().decode(JobSpec.self, from: Data(#"{"kind": "playback", "room": 1, "key": {"none": true}, "loop": false, "file": "missing.opus"}"#.utf8))
        let writer = try #require(s.store.writer)
        writer.save(JobStore.Record(id: "play-1", spec: gone, created: Date(), resumes: 2, outcome: nil, pauses: nil, state: "running"))
        let old = Job.Outcome(state: .done, ended: Date().addingTimeInterval(-3600), error: nil)
        writer.save(JobStore.Record(id: "rec-old", spec: Self.recording, created: Date().addingTimeInterval(-7200), resumes: 0, outcome: old, pauses: nil, state: "done"))
        await writer.flush()

        let next = try Instance(s.dir)
        _ = await next.manager.startStore()
        let taken = try await next.manager.status("play-1")
        #expect(taken.state == "failed" && taken.lastError?.hasPrefix("not resumed: ") == true, "\(taken.state): \(taken.lastError ?? "")")
        #expect(try await next.manager.status("rec-old").state == "done", "listed as it ended")
        #expect(try await next.onDisk() == ["play-1": "failed", "rec-old": "done"])

        await next.manager.pruneFinished()
        await #expect(throws: RequestProblem(status: 404, message: "no job rec-old")) { try await next.manager.status("rec-old") }
        #expect(try await next.onDisk() == ["play-1": "failed"], "ended an hour ago, kept 60 s: forgotten")
    }
}

/// A job's end held back (its files being finished) until `open`.
final class Hold: @unchecked Sendable {
    // @unchecked: `waiting` is only touched with `lock` held.
    private let lock = NSLock()
    private var waiting: CheckedContinuation<Void, Never>?

    func held(_ c: CheckedContinuation<Void, Never>) { lock.withLock { waiting = c } }
    var holding: Bool { lock.withLock { waiting != nil } }
    func open() { lock.withLock { waiting.take() }?.resume() }
}

extension JobManager {
    /// A job started by the test, watched as `launch` watches its own.
    func adopt(_ job: Job) {
        jobs[job.id] = job
        order.append(job.id)
        persist(job)
        Task { [weak self] in
            await job.wait()
            await self?.ended(job)
        }
    }

    /// The store's start, as `run` does it; answers whether it started loops.
    func startStore() async -> Bool {
        let loops = await store.start(in: self)
        loops?.cancel()
        return loops != nil
    }
}
