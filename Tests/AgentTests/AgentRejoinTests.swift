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

extension MediaScene {
    /// Rejoins both ways, through RabbitMQ and the stand-in backend (ECALL-WIRE §7): the agent
    /// answers a phone's `participant_request_rejoin`, and the agent that lost its media asks,
    /// takes a participant's key, rejoins and runs again.
    @Suite(.serialized, .enabled(if: Broker.url != nil, "needs the local RabbitMQ: run `make test`"))
    struct AgentRejoinTests {
        typealias Phone = AgentTests.Phone

        /// A running agent (logged in, on STOMP) with scripted media, invited by `caller` (the
        /// key host, listening on its queue through `answer`) to a call in a new room.
        struct Call {
            let agent: Agent
            let running: Task<Void, any Error>
            let me: (userID: Int64, deviceID: Int64)
            let agentPublic: DevicePublicKey
            let caller: Phone
            let callerInbox: Inbox
            let id: Int64
            let room: Int64
            let key: CallKey
            let media: ScriptedMedia
            let log: CapturedLog

            func stop() async {
                running.cancel()
                _ = try? await running.value
                await caller.stomp.close()
            }

            /// The accept a phone sends, as the apps make it: the request copied, the type
            /// changed, `participantId` the rejoiner, the key wrapped for it.
            func accept(_ request: SignalMessage, _ key: CallKey, from sender: DeviceIdentity) throws -> SignalMessage {
                var m = request
                m.type = SignalMessage.Kind.participantAcceptRejoin.rawValue
                m.participantId = me.userID
                m.encryptedAESKey = try KeyWrap.wrap(key, for: agentPublic, from: sender)
                return m
            }
        }

        static func call(_ name: String, dir: URL, backend: ECallStandIn, api: String, media: ScriptedMedia, rejoin: RejoinPolicy = .init(),
                         answer: @escaping @Sendable (Phone, SignalMessage) async -> Void = { _, _ in }) async throws
            -> (Call, events: AsyncStream<Int64>.Iterator) {
            try DeviceIdentity.generate(.p256).write(toNewFile: dir.appendingPathComponent("identity.key").path)
            let configFile = dir.appendingPathComponent("agent.json")
            try JSONSerialization.data(withJSONObject: [
                "api": api, "api_id": "sfubot-dev", "api_secret": "sfubot-dev-secret", "identity": "identity.key", "session": "session.json",
                "email": "\(name)@example.test", "display_name": "Recorder", "otp": backend.configuration.otp, "janus": Scene.janusURL!,
                "on_invite": "record", "recordings": "recordings", "poll_seconds": 0.5,
            ]).write(to: configFile)
            let log = CapturedLog()
            let agent = Agent(config: try AgentConfig.load(configFile.path), pipelines: try PipelineLibrary(), logger: log.logger("agent"),
                              media: media, rejoin: rejoin)
            let running = Task { try await agent.run(readOTP: { nil }) }
            guard await eventually(within: 10, { await agent.device != nil }), let me = await agent.device else {
                running.cancel()
                throw AgentError.backend("the agent did not log in within 10 s")
            }
            let caller = try await Phone.login("caller", url: api, otp: backend.configuration.otp)
            let inbox = Inbox(await caller.stomp.subscribe("/exchange/ecall.signal.out/\(caller.session.deviceId)")) { await answer(caller, $0) }
            let agentPublic = try DevicePublicKey(wire: try #require(try await caller.client.publicKeys(userIDs: [me.userID])["\(me.userID)_\(me.deviceID)"]))
            let room = try await Scene.createRoom(), key = CallKey.random()
            let call = try await caller.client.startCall(.init(roomId: room, calleeIds: [me.userID],
                encryptedAESKeys: ["\(me.userID)_\(me.deviceID)": try KeyWrap.wrap(key, for: agentPublic, from: caller.identity)], isVideo: false))
            var events = agent.events.makeAsyncIterator()
            #expect(await events.next() == call.id)
            return (Call(agent: agent, running: running, me: me, agentPublic: agentPublic, caller: caller, callerInbox: inbox, id: call.id,
                         room: room, key: key, media: media, log: log), events)
        }

        /// The agent's REST calls on call `id`, as the stand-in saw them: "join", "request-rejoin", ...
        static func restCalls(_ backend: ECallStandIn, device: Int64, call id: Int64) -> [String] {
            backend.restCalls.filter { $0.deviceId == device && $0.path.hasPrefix("/app/api/call/\(id)/") && $0.method == "POST" }
                .map { "\($0.path.split(separator: "/").last!) \($0.status)" }
        }

        @Test func theAgentAnswersAPhonesRejoinRequestWithTheCallKey() async throws {
            let dir = try Scene.tempDirectory("agent-answers-rejoin")
            try await Broker.withBackend { backend, api in
                let rejoiner = try await Phone.login("rejoiner", url: api, otp: backend.configuration.otp)
                let rejoinerInbox = Inbox(await rejoiner.stomp.subscribe("/exchange/ecall.signal.out/\(rejoiner.session.deviceId)"))
                let (call, _) = try await Self.call("answering", dir: dir, backend: backend, api: api, media: ScriptedMedia([.idle]))
                // A second phone is invited and joins after the agent.
                _ = try await call.caller.client.invite(callID: call.id, .init(roomId: call.room, calleeIds: [rejoiner.session.userId], encryptedAESKeys: [:], isVideo: false))
                _ = try await rejoiner.client.join(callID: call.id)

                // The phone lost the call: the backend asks everyone else still in it.
                _ = try await rejoiner.client.requestRejoin(callID: call.id)
                #expect(await eventually(within: 5) { !rejoinerInbox.all(.participantAcceptRejoin).isEmpty }, "the agent answered")
                let answer = try #require(rejoinerInbox.all(.participantAcceptRejoin).first)
                // Addressed as the apps check it; the key is the call's, wrapped by the agent's published key.
                #expect(answer.callId == call.id && answer.participantId == rejoiner.session.userId && answer.calleeDeviceId == rejoiner.session.deviceId)
                let opened = try KeyWrap.unwrap(try #require(answer.encryptedAESKey), with: rejoiner.identity)
                #expect(opened.key.same(as: call.key), "the accept carries the call key")
                #expect(opened.sender == call.agentPublic)

                // The backend's request went to the caller and the agent, not to the rejoiner.
                let request = try #require(call.callerInbox.all(.participantRequestRejoin).first)
                #expect(request.callId == call.id && request.participantId == rejoiner.session.userId && request.calleeDeviceId == rejoiner.session.deviceId)
                #expect(rejoinerInbox.all(.participantRequestRejoin).isEmpty)
                #expect(backend.counters.rejoinRequestsSent == 2 && backend.counters.rejoinRequestsUnsent == 0, "\(backend.counters)")
                let counters = await call.agent.counters
                #expect(counters.keysSent == 1 && counters.rejoinRequests == 0 && counters.mediaLost == 0, "\(counters)")

                // Then the phone rejoins: the CallRecord names the room. A second rejoin without
                // asking again is refused, and a stranger cannot ask.
                let record = try await rejoiner.client.rejoin(callID: call.id)
                #expect(record.janusRoomId == call.room)
                await #expect(throws: ECallError.self) { _ = try await rejoiner.client.rejoin(callID: call.id) }
                let stranger = try await Broker.Device.login("stranger", url: api, otp: backend.configuration.otp)
                do {
                    _ = try await stranger.client.requestRejoin(callID: call.id)
                    Issue.record("a stranger asked to rejoin a call it is not in")
                } catch let e as ECallError {
                    #expect(e.status == 403, "\(e)")
                }
                await call.stop()
                await rejoiner.stomp.close()
            }
        }

        @Test func anAgentThatLostItsMediaRejoinsWithTheKeyAParticipantSends() async throws {
            let dir = try Scene.tempDirectory("agent-rejoins")
            try await Broker.withBackend { backend, api in
                // The call moves to another room while the agent is out; the caller answers the
                // rejoin request with a NEW key, as the apps do.
                let newRoom = try await Scene.createRoom(), newKey = CallKey.random()
                let holder = Holder<Call>()
                // The first media is the real recorder, against a Janus that is not there: it fails
                // as a lost Janus does. The second is the real recorder in the room it is given.
                let (call, firstEvents) = try await Self.call("rejoining", dir: dir, backend: backend, api: api, media: ScriptedMedia([.deadJanus, .real])) { phone, m in
                    guard m.kind == .participantRequestRejoin, let call = holder.get, m.participantId == call.me.userID else { return }
                    backend.moveCall(call.id, toJanusRoom: newRoom)
                    try? await phone.send(try call.accept(m, newKey, from: phone.identity))
                }
                holder.set(call)
                var events = firstEvents
                let rejoined = await eventually(within: 20) { await call.agent.counters.rejoins == 1 }
                let afterRejoin = await call.agent.counters
                #expect(rejoined, "\(afterRejoin)")

                // The caller talks in the new room with the new key; the agent records it.
                let tone = try await Audio.tone(440, seconds: 4, in: dir)
                _ = try await Player(config: try Scene.config(room: newRoom, display: "\(call.caller.session.userId):Caller", protection: .e2ee(KeyRing(current: newKey))),
                                     file: tone.path).run()
                try await Task.sleep(for: .milliseconds(500))
                var ended = SignalMessage(type: .callEnded)
                ended.callId = call.id
                ended.participantId = call.me.userID
                ended.participantDeviceId = call.me.deviceID
                try await call.caller.client.endCall(callID: call.id)
                try await call.caller.send(ended)
                #expect(await events.next() == -call.id)

                // On the wire: one request, to the caller, for the agent's device; then the agent's
                // REST calls in order.
                let requests = call.callerInbox.all(.participantRequestRejoin)
                #expect(requests.count == 1 && requests.first?.participantId == call.me.userID && requests.first?.calleeDeviceId == call.me.deviceID, "\(requests)")
                #expect(Self.restCalls(backend, device: call.me.deviceID, call: call.id) == ["join 200", "request-rejoin 200", "rejoin 200"])
                // The second media ran in the room /rejoin named, with the new key in the ring.
                let starts = call.media.starts
                #expect(starts.map(\.room) == [call.room, newRoom] && starts.map(\.segment) == [0, 1])
                #expect(starts.first?.key.map { $0.same(as: call.key) } == true)
                #expect(starts.last?.key.map { $0.same(as: newKey) } == true, "the accepted key is current when the media starts again")
                let counters = await call.agent.counters
                #expect(counters.mediaLost == 1 && counters.rejoinRequests == 1 && counters.rejoins == 1, "\(counters)")
                #expect(counters.rejoinsFailed == 0 && counters.callsLost == 0 && counters.rejoinAcceptsRefused == 0, "\(counters)")
                #expect(call.log.text.contains("lost the call's media") && call.log.text.contains("rejoined room \(newRoom)"))

                // The recording after the rejoin opened every frame the caller sealed with the new key.
                let out = dir.appendingPathComponent("recordings/\(call.id)/rejoin-1")
                let manifest = try JSONDecoder.manifest.decode(RecordingManifest.self, from: Data(contentsOf: out.appendingPathComponent("manifest.json")))
                let feed = try #require(manifest.feeds.first { $0.userID == String(call.caller.session.userId) })
                #expect(feed.frames.droppedTotal == 0 && feed.frames.opened >= 150, "\(feed.frames)")
                let samples = try await Audio.decodeTimed(out.appendingPathComponent(feed.file))
                #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 9)
                print("agent rejoin: \(call.log.text.split(separator: "\n").first { $0.contains("rejoined room") } ?? "")")
                await call.stop()
            }
        }

        @Test func wrongAcceptsAreRefusedAndCountedAndTheRightOneIsTaken() async throws {
            let dir = try Scene.tempDirectory("agent-rejoin-wrong")
            try await Broker.withBackend { backend, api in
                let mallory = try await Broker.Device.login("mallory", url: api, otp: backend.configuration.otp)
                let right = CallKey.random(), late = CallKey.random()
                let holder = Holder<Call>()
                let (call, _) = try await Self.call("refusing", dir: dir, backend: backend, api: api,
                                               media: ScriptedMedia([.fail("test: the Janus session ended", retryable: true), .idle])) { phone, m in
                    guard m.kind == .participantRequestRejoin, let call = holder.get, m.participantId == call.me.userID,
                          var otherCall = try? call.accept(m, .random(), from: phone.identity) else { return }
                    // Another call's: not the agent's business (counted as another call's message).
                    otherCall.callId = call.id + 1_000_000
                    // For another device of the agent's user (routed to this one all the same).
                    var otherDevice = try! call.accept(m, .random(), from: phone.identity)
                    otherDevice.participantDeviceId = call.me.deviceID
                    otherDevice.calleeDeviceId = call.me.deviceID + 7
                    // A key wrapped for somebody else: it does not unwrap.
                    var badWrap = m
                    badWrap.type = SignalMessage.Kind.participantAcceptRejoin.rawValue
                    badWrap.participantId = call.me.userID
                    badWrap.encryptedAESKey = try! KeyWrap.wrap(.random(), for: mallory.identity.publicKey, from: phone.identity)
                    // A key a stranger (not in the call) wrapped for the agent: it unwraps, but the
                    // embedded sender key is nobody's in the call.
                    let stranger = try! call.accept(m, .random(), from: mallory.identity)
                    for wrong in [otherCall, otherDevice, badWrap, stranger] { try? await phone.send(wrong) }
                    // The right one, then a late second one (another participant answering too).
                    try? await phone.send(try! call.accept(m, right, from: phone.identity))
                    try? await phone.send(try! call.accept(m, late, from: phone.identity))
                }
                holder.set(call)
                let rejoined = await eventually(within: 20) { await call.agent.counters.rejoins == 1 }
                let afterRejoin = await call.agent.counters
                #expect(rejoined, "\(afterRejoin)")
                try await Task.sleep(for: .milliseconds(700))  // the late accept arrives and is dropped

                let counters = await call.agent.counters
                #expect(counters.rejoinAcceptsRefused == 3 && counters.otherCalls == 1, "\(counters)")
                #expect(counters.rejoins == 1 && counters.rejoinRequests == 1 && counters.callsLost == 0, "\(counters)")
                let starts = call.media.starts
                #expect(starts.count == 2 && starts.last?.key.map { $0.same(as: right) } == true, "the first right accept, no wrong one, no late one")
                #expect(starts.last?.ring?.sealingKey.map { $0.same(as: right) } == true, "the late accept did not replace the key")
                let logged = call.log.text
                #expect(logged.contains("not to this device") && logged.contains("not wrapped by a participant's published key"))
                for line in logged.split(separator: "\n") where line.contains("refused a participant_accept_rejoin") { print("wrong accept: \(line.prefix(200))") }
                #expect(await call.agent.device != nil, "still running")
                await call.stop()
            }
        }
    }
}

/// A value set once from another task.
final class Holder<T: Sendable>: Sendable {
    private let value = Locked<T?>(nil)
    func set(_ v: T) { value.withLock { $0 = v } }
    var get: T? { value.withLock { $0 } }
}
