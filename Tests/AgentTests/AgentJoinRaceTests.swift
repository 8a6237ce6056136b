import Bot
@testable import ECallAgent
import ECall
import FrameCrypto
import Foundation
import Logging
import Synchronization
import Testing
import Locking

/// `call_ended` while `Agent.join` waits on the backend: the join must give up, not start the
/// bot in a call that has ended (the bot would stay in the room). No network: the backend is a
/// fake that holds one reply, the media a stand-in that only counts.
struct AgentJoinRaceTests {
    /// Holds the reply of `step` until the test releases it.
    final class HeldBackend: AgentBackend {
        enum Step: Sendable { case participants, join, none }
        let step: Step
        let me: SessionState
        private let reachedStream = AsyncStream.makeStream(of: Void.self)
        private let releaseStream = AsyncStream.makeStream(of: Void.self)

        init(holding step: Step, me: SessionState) {
            self.step = step
            self.me = me
        }

        var session: SessionState? { me }
        func activeCalls() async throws -> [CallRecord] { [] }
        func participants(callID: Int64) async throws -> [Participant] {
            await hold(.participants)
            return []
        }
        func publicKeys(userIDs: [Int64]) async throws -> [String: String] { [:] }
        func credentials() async throws -> Credentials { try JSONDecoder().decode(Credentials.self, from: Data(#"{"rabbitmqToken":"t"}"#.utf8)) }
        func join(callID: Int64) async throws -> CallRecord {
            await hold(.join)
            return try JSONDecoder().decode(CallRecord.self, from: Data(#"{"id":\#(callID)}"#.utf8))
        }

        func requestRejoin(callID: Int64) async throws -> CallRecord { try JSONDecoder().decode(CallRecord.self, from: Data(#"{"id":\#(callID)}"#.utf8)) }
        func rejoin(callID: Int64) async throws -> CallRecord { try JSONDecoder().decode(CallRecord.self, from: Data(#"{"id":\#(callID)}"#.utf8)) }

        private func hold(_ at: Step) async {
            guard at == step else { return }
            reachedStream.continuation.yield()
            var release = releaseStream.stream.makeAsyncIterator()
            _ = await release.next()
        }

        /// Returns once the agent waits on the held reply.
        func reached() async {
            var it = reachedStream.stream.makeAsyncIterator()
            _ = await it.next()
        }

        func release() { releaseStream.continuation.yield() }
    }

    /// Media that records each start and runs until cancelled.
    final class CountedMedia: CallMedia {
        private let tasks = Locked<[Task<CallMediaEnd, Never>]>([])
        var started: Int { tasks.withLock { $0.count } }
        var running: Int { tasks.withLock { $0.filter { !$0.isCancelled }.count } }

        func start(_ bot: BotConfig, _ action: AgentConfig.InviteAction, callID: Int64, segment: Int, logger: Logger) -> Task<CallMediaEnd, Never> {
            let task = Task { while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }; return CallMediaEnd.stopped }
            tasks.withLock { $0.append(task) }
            return task
        }

        func stopAll() { tasks.withLock { $0.forEach { $0.cancel() } } }
    }

    /// A running agent (no login, no STOMP) on `backend`, an invitation to call 41 for it, and
    /// the `call_ended` that ends it.
    static func scene(_ backend: (SessionState) -> HeldBackend, media: CountedMedia) async throws
        -> (agent: Agent, backend: HeldBackend, invitation: Data, ended: Data) {
        let config = try JSONDecoder().decode(AgentConfig.self, from: Data("""
            {"api":"http://127.0.0.1:1/app/api","api_id":"a","api_secret":"s","identity":"k","session":"s",
             "email":"a@b","display_name":"A","janus":"ws://127.0.0.1:1"}
            """.utf8))
        let me = try JSONDecoder().decode(SessionState.self, from: Data(#"{"userId":7,"deviceId":8,"accessToken":"a","refreshToken":"r"}"#.utf8))
        let identity = try DeviceIdentity.generate(.p256), caller = try DeviceIdentity.generate(.p256)
        let backend = backend(me)
        let agent = Agent(config: config, pipelines: try PipelineLibrary(), logger: Logger(label: "test.agent"), media: media)
        await agent.attach(.init(backend: backend, stomp: nil, identity: identity, me: me))
        var invitation = SignalMessage(type: .callInvitation)
        invitation.callId = 41
        invitation.roomId = 1234
        invitation.encryptedAESKey = try KeyWrap.wrap(.random(), for: identity.publicKey, from: caller)
        var ended = SignalMessage(type: .callEnded)
        ended.callId = 41
        return (agent, backend, invitation.json, ended.json)
    }

    @Test(arguments: [HeldBackend.Step.participants, .join])
    func callEndedWhileJoiningCancelsTheJoin(held: HeldBackend.Step) async throws {
        let media = CountedMedia()
        defer { media.stopAll() }
        let (agent, backend, invitation, ended) = try await Self.scene({ HeldBackend(holding: held, me: $0) }, media: media)

        let joining = Task { await agent.received(invitation) }
        await backend.reached()
        await agent.received(ended)
        backend.release()
        await joining.value

        let c = await agent.counters
        #expect(media.started == 0 && media.running == 0, "the bot was started in a call that had ended")
        #expect(c.callsEnded == 1 && c.callsJoined == 0, "\(c)")
        // The ended call is not joined again when an invitation or the poll names it.
        await agent.received(invitation)
        let again = await agent.counters
        #expect(media.started == 0 && again.callsJoined == 0)
    }

    @Test func stoppingWhileJoiningStartsNoBot() async throws {
        let media = CountedMedia()
        defer { media.stopAll() }
        let (agent, backend, invitation, _) = try await Self.scene({ HeldBackend(holding: .join, me: $0) }, media: media)

        let joining = Task { await agent.received(invitation) }
        await backend.reached()
        await agent.stop()
        backend.release()
        await joining.value

        let c = await agent.counters
        #expect(media.started == 0 && c.callsEnded == 1 && c.callsJoined == 0, "\(c)")
        var events = agent.events.makeAsyncIterator()
        #expect(await events.next() == nil, "stopped: no call joined, the event stream finished")
    }

    @Test func aJoinedCallRunsItsBotUntilTheCallEnds() async throws {
        let media = CountedMedia()
        defer { media.stopAll() }
        // Holding a step the agent never takes: every reply comes at once.
        let (agent, backend, invitation, ended) = try await Self.scene({ HeldBackend(holding: .none, me: $0) }, media: media)
        _ = backend
        var events = agent.events.makeAsyncIterator()
        await agent.received(invitation)
        #expect(media.started == 1 && media.running == 1)
        #expect(await events.next() == 41)
        await agent.received(ended)
        #expect(media.running == 0)
        #expect(await events.next() == -41)
        let c = await agent.counters
        #expect(c.callsJoined == 1 && c.callsEnded == 1, "\(c)")
    }
}
