import Foundation
import FrameCrypto
import Janus
import JanusTesting
import Logging
import Synchronization
import Testing
@testable import Bot
import Locking
import TestSupport

/// `finish()` arriving while the recorder is opening a session (issue 26, part 3), against a
/// scripted Janus: whatever the recorder opened must be closed, or under `serve` a ghost
/// publisher stays in the room. The interleavings are forced with latches, not sleeps.
@Suite struct RecorderEndRaceTests {
    let room: Int64 = 1234

    /// A rejoin's new session is up and still wanted; `finish()` runs before the actor takes it
    /// (the hop back). The recorder used to store it and never close it.
    @Test func aSessionARejoinOpensAsTheRecordingFinishesIsClosed() async throws {
        let old = FakeJanus(autoReply: .lifecycle, sessionID: 1001)
        let new = FakeJanus(autoReply: .lifecycle, sessionID: 2002)
        let first = try await JanusSession.open(over: old, url: "fake://janus", logger: Scene.logger)
        let second = try await JanusSession.open(over: new, url: "fake://janus", logger: Scene.logger)
        let connects = ComeBackTests.Counter(), asked = ComeBackTests.Counter()
        let reached = Latch(), release = Latch()
        let dir = try Scene.tempDirectory("race-rejoin")
        defer { try? FileManager.default.removeItem(at: dir) }
        let recording = RoomRecording(
            config: try config(), directory: dir, mixFile: nil,
            connect: { _ in
                connects.increment()
                return connects.value == 1 ? first : second
            },
            hooks: .init(rejoinStillWanted: {
                // Asked before the attempt, then after it joined: hold the second.
                asked.increment()
                guard asked.value == 2 else { return }
                reached.open()
                await release.wait()
            }))
        let starting = Task { try await recording.start() }
        try await Self.joinRoom(old, room: room)
        try await starting.value

        // Janus lost the session: the rejoin opens a new one and joins the room on it.
        await recording.startRejoin("test: the session ended", rejoinSession: true)
        try await Self.joinRoom(new, room: room)
        await reached.wait()
        // Now, between `stillWanted` and the hop back: the recording finishes, completely.
        let final = await recording.finish()
        #expect(final != nil)
        release.open()
        await recording.rejoining?.value

        #expect(await recording.state == .finished)
        #expect(new.received.contains { $0.janus == "destroy" }, "the new session is destroyed, not left in the room")
        #expect(await new.waitUntilClosed(timeout: .seconds(5)), "the new session's connection is closed")
        await first.close()
        await second.close()
    }

    /// `finish()` while `start` is still connecting: `start` fails, and the session it then
    /// gets is closed. `start` used to join the room on it, leave, and keep it open.
    @Test func aSessionStartOpensAsTheRecordingFinishesIsClosed() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await JanusSession.open(over: fake, url: "fake://janus", logger: Scene.logger)
        let reached = Latch(), release = Latch()
        let dir = try Scene.tempDirectory("race-start")
        defer { try? FileManager.default.removeItem(at: dir) }
        let recording = RoomRecording(config: try config(), directory: dir, mixFile: nil, connect: { _ in
            reached.open()
            await release.wait()
            return session
        })
        // Janus answers whatever the recorder asks of the room (the old code joined it).
        let room = self.room
        let janus = Task {
            while let r = try? await fake.nextRequest(timeout: .seconds(3600)) {
                switch r.request {
                case "exists": fake.reply(to: r, .pluginSuccess(data: ["videoroom": "success", "room": .int(room), "exists": true]))
                case "join": fake.reply(to: r, .event(data: ["videoroom": "joined", "room": .int(room), "id": 77, "private_id": 5, "publishers": []]))
                case "leave": fake.reply(to: r, .event(data: ["videoroom": "event", "leaving": "ok"]))
                default: break
                }
            }
        }
        defer { janus.cancel() }
        let starting = Task { try await recording.start() }
        await reached.wait()
        _ = await recording.finish()
        release.open()
        await #expect(throws: (any Error).self, "start gives up: the recording finished") { try await starting.value }

        #expect(await recording.state == .finished)
        #expect(fake.received.contains { $0.janus == "destroy" }, "the session is destroyed")
        #expect(await fake.waitUntilClosed(timeout: .seconds(5)), "the session's connection is closed")
        #expect(!fake.received.contains { $0.request == "join" }, "no room joined for a recording that finished")
        await session.close()
    }

    func config() throws -> BotConfig {
        try BotConfig(janusURL: "fake://janus", room: room, display: "9:Rec", protection: .e2ee(KeyRing(current: .random())),
                      pipelines: PipelineLibrary(), logger: Scene.logger)
    }

    /// The roster's `exists` and publisher `join`, in an empty room (no subscription follows).
    static func joinRoom(_ fake: FakeJanus, room: Int64) async throws {
        let exists = try await fake.nextRequest("message")
        #expect(exists.request == "exists")
        fake.reply(to: exists, .pluginSuccess(data: ["videoroom": "success", "room": .int(room), "exists": true]))
        let join = try await fake.nextRequest("message")
        #expect(join.request == "join")
        fake.reply(to: join, .event(data: ["videoroom": "joined", "room": .int(room), "id": 77, "private_id": 5, "publishers": []]))
    }
}

/// Opens once; every `wait()` before or after returns then. Unlike an AsyncStream it ignores
/// cancellation: a hook must hold its task however it was cancelled.
final class Latch: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                if s.open { return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { s in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }
}
