import Bot
@testable import ECallAgent
import ECall
import ECallStandIn
import FrameCrypto
import Foundation
import Logging
import Synchronization
import Testing
import TestSupport
import Locking

/// Rejoins that end without a key: nobody answers (the call is counted lost), or the call ends
/// while the agent is rejoining (the rejoin stops).
extension MediaScene.AgentRejoinTests {
    @Test func nobodyAnswersSoTheAgentGivesUpAndCountsTheCallLost() async throws {
        let dir = try Scene.tempDirectory("agent-rejoin-giveup")
        try await Broker.withBackend { backend, api in
            let policy = RejoinPolicy(acceptTimeout: .seconds(1), attempts: 2, firstBackoff: .milliseconds(200), maxBackoff: .seconds(1))
            let (call, firstEvents) = try await Self.call("unanswered", dir: dir, backend: backend, api: api,
                                           media: ScriptedMedia([.fail("test: Janus unreachable", retryable: true), .idle]), rejoin: policy)
            var events = firstEvents
            // Two requests, 1 s each, 0.1–0.2 s apart: the counters below say it stopped after two.
            #expect(await events.next() == -call.id, "the agent left the call it could not get back into")
            let counters = await call.agent.counters
            #expect(counters.rejoinRequests == 2 && counters.rejoinsFailed == 1 && counters.callsLost == 1 && counters.rejoins == 0, "\(counters)")
            #expect(Self.restCalls(backend, device: call.me.deviceID, call: call.id) == ["join 200", "request-rejoin 200", "request-rejoin 200"])
            #expect(call.callerInbox.all(.participantRequestRejoin).count == 2)
            #expect(call.log.text.contains("lost: gave up rejoining after 2 attempt(s)") && call.log.text.contains("test: Janus unreachable"))
            // The call is still active at the backend, but the agent does not join it again.
            try await Task.sleep(for: .seconds(1.5))
            let joins = await call.agent.counters.callsJoined
            #expect(call.media.starts.count == 1 && joins == 1)
            await call.stop()
        }
    }

    @Test func callEndedWhileRejoiningStopsTheRejoin() async throws {
        let dir = try Scene.tempDirectory("agent-rejoin-ended")
        try await Broker.withBackend { backend, api in
            let policy = RejoinPolicy(acceptTimeout: .seconds(2), attempts: 3, firstBackoff: .milliseconds(200), maxBackoff: .seconds(1))
            let holder = Holder<Call>()
            let (call, firstEvents) = try await Self.call("ended", dir: dir, backend: backend, api: api,
                                           media: ScriptedMedia([.fail("test: Janus unreachable", retryable: true), .idle]), rejoin: policy) { phone, m in
                // The call ends instead of anyone answering.
                guard m.kind == .participantRequestRejoin, let call = holder.get else { return }
                var ended = SignalMessage(type: .callEnded)
                ended.callId = call.id
                ended.participantId = call.me.userID
                ended.participantDeviceId = call.me.deviceID
                try? await phone.client.endCall(callID: call.id)
                try? await phone.send(ended)
            }
            holder.set(call)
            var events = firstEvents
            #expect(await events.next() == -call.id)
            try await Task.sleep(for: .seconds(3))  // longer than an accept timeout plus a backoff
            let counters = await call.agent.counters
            #expect(counters.rejoinRequests == 1 && counters.rejoins == 0 && counters.rejoinsFailed == 0 && counters.callsLost == 0, "\(counters)")
            #expect(counters.callsEnded == 1)
            #expect(Self.restCalls(backend, device: call.me.deviceID, call: call.id) == ["join 200", "request-rejoin 200"], "no rejoin after call_ended")
            #expect(call.media.starts.count == 1)
            await call.stop()
        }
    }
}
