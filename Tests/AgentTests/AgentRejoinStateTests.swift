import Bot
@testable import ECallAgent
import ECall
import FrameCrypto
import Comeback
import Janus
import Foundation
import Logging
import Synchronization
import Testing
import TestSupport
import Locking

/// The rejoin's state with no network: a backend that can hold `request-rejoin`, media a test
/// scripts. The interleavings (a second loss report, `call_ended` while the request waits) are
/// forced, not hoped for.
struct AgentRejoinStateTests {
    final class RejoinBackend: AgentBackend {
        let me: SessionState
        let caller: DeviceIdentity
        let holdRequests: Bool
        private let counts = Locked((requests: 0, rejoins: 0))
        private let reachedStream = AsyncStream.makeStream(of: Void.self)
        private let releaseStream = AsyncStream.makeStream(of: Void.self)

        init(me: SessionState, caller: DeviceIdentity, holdRequests: Bool) {
            self.me = me
            self.caller = caller
            self.holdRequests = holdRequests
        }

        var requests: Int { counts.withLock { $0.requests } }
        var rejoins: Int { counts.withLock { $0.rejoins } }

        var session: SessionState? { me }
        func activeCalls() async throws -> [CallRecord] { [] }
        func participants(callID: Int64) async throws -> [Participant] {
            try JSONDecoder().decode([Participant].self, from: Data(#"[{"userId":9,"deviceId":10,"isHostKey":true,"status":"joined"}]"#.utf8))
        }
        func publicKeys(userIDs: [Int64]) async throws -> [String: String] { ["9_10": caller.publicKey.wire] }
        func credentials() async throws -> Credentials { try JSONDecoder().decode(Credentials.self, from: Data(#"{"rabbitmqToken":"t"}"#.utf8)) }
        func join(callID: Int64) async throws -> CallRecord { try Self.record(callID) }
        func requestRejoin(callID: Int64) async throws -> CallRecord {
            counts.withLock { $0.requests += 1 }
            if holdRequests {
                reachedStream.continuation.yield()
                var release = releaseStream.stream.makeAsyncIterator()
                _ = await release.next()
            }
            return try Self.record(callID)
        }
        func rejoin(callID: Int64) async throws -> CallRecord {
            counts.withLock { $0.rejoins += 1 }
            return try Self.record(callID)
        }

        static func record(_ id: Int64) throws -> CallRecord {
            try JSONDecoder().decode(CallRecord.self, from: Data(#"{"id":\#(id),"janusRoomId":1234}"#.utf8))
        }

        func reached() async {
            var it = reachedStream.stream.makeAsyncIterator()
            _ = await it.next()
        }

        func release() { releaseStream.continuation.yield() }
    }

    /// An agent (no login, no STOMP) joined to call 41, invited by user 9's device 10.
    static func joined(media: ScriptedMedia, holdRequests: Bool = false, acceptTimeout: Duration = .seconds(1)) async throws
        -> (agent: Agent, backend: RejoinBackend, identity: DeviceIdentity, key: CallKey, events: AsyncStream<Int64>.Iterator) {
        let config = try JSONDecoder().decode(AgentConfig.self, from: Data("""
            {"api":"http://127.0.0.1:1/app/api","api_id":"a","api_secret":"s","identity":"k","session":"s",
             "email":"a@b","display_name":"A","janus":"ws://127.0.0.1:1"}
            """.utf8))
        let me = try JSONDecoder().decode(SessionState.self, from: Data(#"{"userId":7,"deviceId":8,"accessToken":"a","refreshToken":"r"}"#.utf8))
        let identity = try DeviceIdentity.generate(.p256), caller = try DeviceIdentity.generate(.p256)
        let backend = RejoinBackend(me: me, caller: caller, holdRequests: holdRequests)
        let agent = Agent(config: config, pipelines: try PipelineLibrary(), logger: Logger(label: "test.agent"), media: media,
                          rejoin: RejoinPolicy(acceptTimeout: acceptTimeout, attempts: 2, firstBackoff: .milliseconds(100)))
        await agent.attach(.init(backend: backend, stomp: nil, identity: identity, me: me))
        let key = CallKey.random()
        var invitation = SignalMessage(type: .callInvitation)
        invitation.callId = 41
        invitation.roomId = 1234
        invitation.encryptedAESKey = try KeyWrap.wrap(key, for: identity.publicKey, from: caller)
        var events = agent.events.makeAsyncIterator()
        await agent.received(invitation.json)
        #expect(await events.next() == 41)
        return (agent, backend, identity, key, events)
    }

    @Test func backoffDoublesFromOneSecondToEightWithJitterAndFourAttempts() {
        let p = RejoinPolicy()
        #expect(p.acceptTimeout == .seconds(10) && p.attempts == 4 && p.stableAfter == .seconds(30))
        // The agent's comeback: the first request at once, then 1, 2, 4 s, each scaled by 0.5…1;
        // after the fourth the call is given up.
        var m = CallSession.Comeback(p.comeback)
        var now = ContinuousClock.now
        #expect(m.handle(.lost(), at: now) == .tryNow(attempt: 1))
        for (n, base) in [(2, 1), (3, 2), (4, 4)] {
            guard case .wait(let until) = m.handle(.failed(RejoinFailure(description: "no"), retryable: true), at: now) else {
                Issue.record("no wait before attempt \(n)"); return
            }
            #expect(now.duration(to: until) >= .seconds(base) / 2 && now.duration(to: until) <= .seconds(base))
            #expect(m.handle(.tick, at: until) == .tryNow(attempt: n))
            now = until
        }
        guard case .giveUp(let last?) = m.handle(.failed(RejoinFailure(description: "still no"), retryable: true), at: now) else {
            Issue.record("did not give up after 4 attempts"); return
        }
        #expect(last.description == "still no")
    }

    @Test func aSecondLossReportStartsNoSecondRejoinAndCallEndedStopsTheOne() async throws {
        let media = ScriptedMedia([.idle])
        let (agent, backend, _, _, joined) = try await Self.joined(media: media, holdRequests: true)
        var events = joined
        let session = try #require(await agent.calls[41])
        await agent.mediaEnded(session, run: 0, .failed("test: Janus unreachable", retryable: true))
        await backend.reached()  // the request-rejoin is in flight, held
        // The same loss reported again, and an older run's end: the call is rejoining already.
        await agent.mediaEnded(session, run: 0, .failed("again", retryable: true))
        await agent.mediaEnded(session, run: 0, .ended)
        let lost = await agent.counters.mediaLost
        #expect(session.phase == .rejoining && lost == 1)

        // call_ended while the request waits: the call is left, the rejoin ends with it.
        var ended = SignalMessage(type: .callEnded)
        ended.callId = 41
        await agent.received(ended.json)
        #expect(await events.next() == -41, "a call being rejoined had a bot: it is reported left")
        backend.release()
        try await Task.sleep(for: .milliseconds(300))
        let c = await agent.counters
        #expect(backend.requests == 1 && backend.rejoins == 0 && media.starts.count == 1, "no rejoin and no media once the call ended")
        #expect(c.rejoinRequests == 0 && c.rejoins == 0 && c.rejoinsFailed == 0 && c.callsLost == 0 && c.callsEnded == 1, "\(c)")
        #expect(session.phase == .left)
    }

    @Test func aLossRejoiningCannotFixIsCountedLostAtOnce() async throws {
        let media = ScriptedMedia([.fail("cannot write the recording: disk full", retryable: false)])
        let (agent, backend, _, _, joined) = try await Self.joined(media: media)
        var events = joined
        #expect(await events.next() == -41)
        let c = await agent.counters
        #expect(c.mediaLost == 1 && c.rejoinsFailed == 1 && c.callsLost == 1 && backend.requests == 0, "\(c)")
    }

    @Test func anAcceptNobodyAskedForIsNotTaken() async throws {
        let media = ScriptedMedia([.idle])
        let (agent, backend, identity, key, _) = try await Self.joined(media: media)
        let session = try #require(await agent.calls[41])
        var accept = SignalMessage(type: .participantAcceptRejoin)
        accept.callId = 41
        accept.participantId = 7
        accept.calleeDeviceId = 8
        accept.encryptedAESKey = try KeyWrap.wrap(.random(), for: identity.publicKey, from: backend.caller)
        await agent.received(accept.json)
        #expect(session.ring.sealingKey.map { $0.same(as: key) } == true, "the ring kept the call's key")
        #expect(await agent.counters.rejoinAcceptsRefused == 0)
        await agent.stop()
    }

    // It was off for failing inside the whole suite on 2 cores ("request-rejoin not sent within
    // 10 s"): with a 1 s accept timeout, the first request had timed out and the second gone
    // out before a starved poll looked, so `requests == 1` was never seen. The accept waits
    // 30 s here; the timeout itself is mediaThatKeepsFailingAfterEachRejoin's.
    @Test func theFirstRightAcceptRejoinsIntoTheRoomTheBackendNames() async throws {
        let media = ScriptedMedia([.fail("test: Janus unreachable", retryable: true), .idle])
        let (agent, backend, identity, _, _) = try await Self.joined(media: media, acceptTimeout: .seconds(30))
        let session = try #require(await agent.calls[41])
        #expect(await eventually(within: 10) { backend.requests == 1 })
        let fresh = CallKey.random()
        var accept = SignalMessage(type: .participantAcceptRejoin)
        accept.callId = 41
        accept.participantId = 7
        accept.calleeDeviceId = 8
        accept.encryptedAESKey = try KeyWrap.wrap(fresh, for: identity.publicKey, from: backend.caller)
        await agent.received(accept.json)
        #expect(await eventually(within: 10) { await agent.counters.rejoins == 1 })
        #expect(backend.rejoins == 1 && session.phase == .joined && media.starts.map(\.segment) == [0, 1])
        #expect(media.starts.last?.key.map { $0.same(as: fresh) } == true)
        await agent.stop()
    }

    @Test func mediaThatKeepsFailingAfterEachRejoinEndsInALostCallNotALoop() async throws {
        let media = ScriptedMedia([.fail("test: room refused", retryable: true)])
        let (agent, backend, identity, _, joined) = try await Self.joined(media: media)
        var events = joined
        // A participant answers every request at once; the media fails again 0.2 s after each rejoin.
        let answering = Task {
            var answered = 0
            while !Task.isCancelled {
                if backend.requests > answered {
                    answered += 1
                    var accept = SignalMessage(type: .participantAcceptRejoin)
                    accept.callId = 41
                    accept.participantId = 7
                    accept.calleeDeviceId = 8
                    accept.encryptedAESKey = try? KeyWrap.wrap(.random(), for: identity.publicKey, from: backend.caller)
                    await agent.received(accept.json)
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        defer { answering.cancel() }
        #expect(await events.next() == -41)
        let c = await agent.counters
        // Two attempts (the policy's), each a successful rejoin whose media failed within 30 s.
        #expect(backend.requests == 2 && c.rejoins == 2 && c.mediaLost == 3 && c.callsLost == 1 && c.rejoinsFailed == 1, "\(c)")
        #expect(media.starts.map(\.segment) == [0, 1, 2])
    }
}
