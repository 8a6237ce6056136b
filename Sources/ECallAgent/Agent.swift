public import Bot
import ECall
import FrameCrypto
import Foundation
public import Logging

/// `sfubot agent`: a full ECall participant. It logs in with its device identity, listens for
/// invitations (STOMP, and polling `GET /call/active`), unwraps the call key, joins the Janus
/// room and records (or plays), follows key rotations from the key host, asks for the key when
/// frames stop opening, and leaves when the call ends. It sends only message types the apps know.
///
/// Its concerns live in extensions: `Agent+Login` (connections), `Agent+Calls` (joining and
/// leaving), `Agent+Signals` (STOMP messages), `Agent+KeyHost` (rotation, key requests, rejoins).
public actor Agent {
    public struct Counters: Sendable, Equatable {
        public var signals = 0
        public var malformedSignals = 0
        public var unknownSignals = 0
        public var otherCalls = 0
        public var rotationsApplied = 0
        public var rotationsRefused = 0
        public var keyRequestsSent = 0
        public var keysReceived = 0
        /// As key host: keys sent (`send_aes_key`, `participant_accept_rejoin`) and rotations made.
        public var keysSent = 0
        public var rotationsMade = 0
        public var callsJoined = 0
        public var callsEnded = 0
    }

    /// What the agent has once it is logged in.
    struct Connections: Sendable {
        let backend: any AgentBackend
        /// nil only in tests that drive `received` directly, with no broker.
        let stomp: StompClient?
        let identity: DeviceIdentity
        let me: SessionState
        let turnServers: [String]
    }

    public let config: AgentConfig
    let pipelines: PipelineLibrary
    let media: any CallMedia
    let log: Logger
    var connections: Connections?
    var calls: [Int64: CallSession] = [:]
    /// Calls left (ended, cancelled): never joined again, even if still listed as active.
    var left: Set<Int64> = []
    public internal(set) var counters = Counters()
    /// Who the agent is logged in as, once it is.
    public var device: (userID: Int64, deviceID: Int64)? { connections.map { ($0.me.userId, $0.me.deviceId) } }
    /// Yields each call id the agent joined, and -id when it left it.
    public nonisolated let events: AsyncStream<Int64>
    let eventSink: AsyncStream<Int64>.Continuation

    public init(config: AgentConfig, pipelines: PipelineLibrary, logger: Logger) {
        self.init(config: config, pipelines: pipelines, logger: logger, media: BotMedia())
    }

    /// `media` starts the bot in a call; tests pass one they can watch.
    init(config: AgentConfig, pipelines: PipelineLibrary, logger: Logger, media: any CallMedia) {
        self.config = config
        self.pipelines = pipelines
        self.media = media
        log = logger
        (events, eventSink) = AsyncStream.makeStream(of: Int64.self)
    }

    /// Runs until cancelled; then leaves every call (finishing its files).
    public func run(readOTP: @Sendable () -> String? = { readLine() }) async throws(AgentError) {
        let c = try await connect(readOTP: readOTP)
        connections = c
        guard let stomp = c.stomp else { return }
        let inbox = await stomp.subscribe("/exchange/ecall.signal.out/\(c.me.deviceId)")
        let poll = Duration.milliseconds(Int64((config.pollSeconds ?? 5) * 1000))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await frame in inbox { await self.received(frame.body) } }
            group.addTask {
                while !Task.isCancelled {
                    await self.pollActiveCalls()
                    try? await Task.sleep(for: poll)
                }
            }
            group.addTask { while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) } }
            await group.next()
            group.cancelAll()
        }
        for id in Array(calls.keys) { await leave(id, reason: "agent stopping") }
        await stomp.close()
        eventSink.finish()
    }

    /// Tests: be logged in with these connections, with no STOMP loop and no polling.
    func attach(_ c: Connections) { connections = c }
}
