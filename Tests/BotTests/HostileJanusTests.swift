import Crypto
import Foundation
import GStreamerKit
import Glibc
import Janus
import JanusTesting
import Logging
import Synchronization
import Testing
@testable import Bot
import TestSupport
import Locking

/// What a broken or hostile Janus (or anyone between it and us) can send: none of it may crash
/// a participant, end its session or hang it (issue 16). No network but 127.0.0.1.
@Suite struct HostileJanusTests {
    static let candidate = "candidate:1 1 udp 2015363327 127.0.0.1 40000 typ host"

    /// `sdpMLineIndex` −1 or 5e9 reached `guint(mline)` and killed record and play (SIGILL).
    /// Every out-of-range or non-integer index is dropped and counted; good candidates pass.
    @Test func candidatesWithAnImpossibleMLineAreDroppedAndCounted() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await JanusSession.open(over: fake, url: "fake://janus", logger: Scene.logger)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let pipeline = try Pipeline(description: "webrtcbin name=w")
        let webrtc = try WebRTCBin(pipeline.element(named: "w"))
        try pipeline.setState(.ready)
        defer { pipeline.setStateQuietly(.null) }
        let (events, tasks) = PeerLink(webrtc: webrtc, handle: handle, logger: Scene.logger).follow()
        defer { tasks.forEach { $0.cancel() } }

        let bad: [JSON] = [-1, 5_000_000_000, .double(5e9), .double(-1), .double(1.5), "x", .int(.max), .int(.min), 1025, .null]
        for mline in bad {
            fake.send(raw: ["janus": "trickle", "session_id": .int(fake.sessionID), "sender": .int(handle.id),
                            "candidate": ["sdpMLineIndex": mline, "candidate": .string(Self.candidate)]])
        }
        fake.push(.trickle(mline: 0, candidate: Self.candidate), to: handle.id)
        fake.push(.trickleCompleted, to: handle.id)
        // Events are handled in order: once `webrtcup` is out, every candidate before it reached webrtcbin.
        fake.push(.webrtcUp, to: handle.id)
        var it = events.makeAsyncIterator()
        while let e = await it.next() {
            if case .mediaUp = e { break }
            if case .lost(let why) = e { Issue.record("the link was lost: \(why)"); break }
        }
        #expect(await session.ignoredMessages == bad.count, "each bad candidate is counted as an ignored message")
        #expect(await session.id == fake.sessionID, "the session is still open")

        // webrtcbin itself refuses what no m-line can be, whoever calls it.
        #expect(!webrtc.addIceCandidate(mline: -1, candidate: Self.candidate))
        #expect(!webrtc.addIceCandidate(mline: 5_000_000_000, candidate: Self.candidate))
        #expect(webrtc.addIceCandidate(mline: 0, candidate: Self.candidate))
        await session.close()
    }

    /// Janus's `timeout` carrying another session's id ended ours. Events for another session,
    /// and replies from another handle than the request's, are ignored and counted.
    @Test func anotherSessionsEventsAndRepliesDoNotTouchOurs() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await JanusSession.open(over: fake, url: "fake://janus", logger: Scene.logger)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        var events = handle.events.makeAsyncIterator()
        let other = Int64(fake.sessionID + 1)
        fake.send(raw: ["janus": "timeout", "session_id": .int(other)])
        fake.send(raw: ["janus": "timeout", "session_id": .string("\(other)")])
        fake.send(raw: ["janus": "timeout"])
        fake.send(raw: ["janus": "hangup", "session_id": .int(other), "sender": .int(handle.id), "reason": "forged"])
        fake.push(.webrtcUp, to: handle.id)
        guard case .webrtcUp? = await events.next() else {
            Issue.record("the first event our handle saw was not our own webrtcup")
            return
        }
        #expect(await session.ignoredMessages == 4)

        // A reply with our transaction but from another handle is not the answer.
        async let joined = VideoRoom.joinAsPublisher(handle, room: 42, display: "7:Test")
        let join = try await fake.nextRequest("message")
        fake.send(raw: ["janus": "event", "session_id": .int(fake.sessionID), "sender": .int(handle.id + 1), "transaction": .string(join.transaction),
                        "plugindata": ["plugin": "janus.plugin.videoroom", "data": ["videoroom": "joined", "room": 42, "id": 666]]])
        fake.reply(to: join, .event(data: ["videoroom": "joined", "room": 42, "id": 99, "publishers": []]))
        #expect(try await joined.id == 99)
        #expect(await session.ignoredMessages == 5)

        // Our own timeout still ends the session.
        fake.pushTimeout()
        #expect(await events.next() == nil, "Janus's timeout of our session ends the handle's events")
        await #expect(throws: JanusError.disconnected) { _ = try await session.attach(plugin: VideoRoom.plugin) }
        await session.close()
    }

    /// Whatever the transport, a message over 4 MiB is not decoded nor acted on (here our own
    /// session's `timeout`, padded), only counted.
    @Test func aMessageOverTheLimitIsNotActedOn() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await JanusSession.open(over: fake, url: "fake://janus", logger: Scene.logger)
        fake.send(raw: ["janus": "timeout", "session_id": .int(fake.sessionID), "pad": .string(String(repeating: "x", count: JanusSession.maxMessageBytes))])
        // Handled in order: once the attach is answered, the padded message was seen.
        _ = try await session.attach(plugin: VideoRoom.plugin)
        #expect(await session.ignoredMessages == 1)
        #expect(await session.id == fake.sessionID, "the session is still open")
        await session.close()
    }

    /// A message over the limit (4 MiB, here in 256 KiB fragments) closes the connection at
    /// once and fails the session with an error that says so; a 16 MB fragmented message used
    /// to stall ~16 s, a 6 MB one was read whole and `create` timed out after 10 s.
    @Test func anOversizedMessageClosesTheConnectionWithAClearError() async throws {
        let outcome = try await connect(toAServerAnsweringCreateWith: Oversized.fragmented(bytes: 6 << 20).frames)
        guard case .failed(let error, let elapsed)? = outcome else { Issue.record("connect gave \(String(describing: outcome))"); return }
        #expect("\(error)".contains("over 4 MiB"), "\(error)")
        #expect(elapsed < .seconds(30), "failed after \(elapsed), not hung")
    }

    /// One frame over the limit: NIO's frame decoder refuses it and closes the connection at
    /// once (the session fails as disconnected: NIO does not tell why).
    @Test func anOversizedFrameClosesTheConnectionAtOnce() async throws {
        let outcome = try await connect(toAServerAnsweringCreateWith: Oversized.oneFrame(bytes: 8 << 20).frames)
        guard case .failed(let error, let elapsed)? = outcome else { Issue.record("connect gave \(String(describing: outcome))"); return }
        #expect((error as? JanusError)?.isConnectionProblem == true, "\(error)")
        #expect(elapsed < .seconds(30), "failed after \(elapsed), not hung")
    }

    /// Connects a session to a raw server that answers the upgrade, waits for `create` and
    /// sends `frames`.
    func connect(toAServerAnsweringCreateWith frames: [UInt8]) async throws -> Outcome? {
        let server = try RawServer()
        defer { server.stop() }
        server.serve { c in
            var byte: UInt8 = 0
            guard RawServer.answerUpgrade(c), recv(c, &byte, 1, 0) == 1 else { return }
            _ = RawServer.send(c, frames)
        }
        return await attempt(within: .seconds(40)) {
            _ = try await JanusSession.connect(url: "ws://127.0.0.1:\(server.port)", logger: Scene.logger)
        }
    }

    /// A port that accepts and never answers the upgrade hung record and play forever.
    @Test func aServerThatNeverAnswersTheHandshakeIsUnreachable() async throws {
        let server = try RawServer()
        defer { server.stop() }
        server.serve { c in _ = RawServer.readRequest(c) }  // and never answer
        let outcome = await attempt(within: .seconds(40)) {
            _ = try await JanusSession.connect(url: "ws://127.0.0.1:\(server.port)", logger: Scene.logger)
        }
        guard case .failed(let error, let elapsed)? = outcome else { Issue.record("connect gave \(String(describing: outcome))"); return }
        let janus = try #require(error as? JanusError)
        #expect(janus.isUnreachable && janus.isConnectionProblem, "exit 69: \(janus)")
        #expect("\(janus)".contains("WebSocket handshake"), "\(janus)")
        #expect(elapsed < .seconds(30), "failed after \(elapsed): the 10 s handshake limit, not a hang")
    }

    /// A Janus that speaks WebSocket but never answers `create` or `attach`: both time out
    /// (`requestTimeout`) with an error that names the request, which the CLI maps to exit 69.
    @Test func createAndAttachTimeOut() async throws {
        var options = JanusSession.Options()
        options.requestTimeout = .milliseconds(300)
        await #expect(throws: JanusError.timeout(request: "create")) {
            _ = try await JanusSession.open(over: FakeJanus(), url: "fake://janus", options: options, logger: Scene.logger)
        }
        let fake = FakeJanus(autoReply: [.create, .destroy])
        let session = try await JanusSession.open(over: fake, url: "fake://janus", options: options, logger: Scene.logger)
        await #expect {
            _ = try await session.attach(plugin: VideoRoom.plugin)
        } throws: { error in
            (error as? JanusError) == .timeout(request: "attach") && (error as? JanusError)?.isConnectionProblem == true
        }
        await session.close()
    }

    enum Outcome: Sendable { case succeeded, failed(any Error, after: Duration) }

    /// Runs `body` in a task the test does not wait for beyond `limit` (a hung connect must
    /// fail the test, not hang it); nil when it did not finish in time.
    func attempt(within limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async -> Outcome? {
        let result = Locked<Outcome?>(nil)
        let clock = ContinuousClock(), start = clock.now, deadline = start + limit
        let task = Task {
            do { try await body(); result.withLock { $0 = .succeeded } } catch { result.withLock { $0 = .failed(error, after: clock.now - start) } }
        }
        while clock.now < deadline {
            if let r = result.withLock({ $0 }) { return r }
            try? await Task.sleep(for: .milliseconds(50))
        }
        task.cancel()
        return nil
    }
}
