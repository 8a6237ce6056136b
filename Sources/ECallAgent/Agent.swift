public import Bot
import ECall
public import FrameCrypto
import Foundation
public import Logging
public import Proof

/// `sfubot agent`: a full ECall participant. It logs in with its device identity, listens for
/// invitations (STOMP, and polling `GET /call/active`), unwraps the call key, joins the Janus
/// room and records (or plays), follows key rotations from the key host, asks for the key when
/// frames stop opening, and leaves when the call ends. It sends only message types the apps know.
///
/// Its concerns live in extensions: `Agent+Login` (connections), `Agent+Calls` (joining and
/// leaving), `Agent+Signals` (STOMP messages), `Agent+KeyHost` (rotation, key requests, answering
/// rejoins), `Agent+Rejoin` (getting back into a call whose media it lost).
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
        /// Calls whose media ended while the call was on (Janus unreachable past the media's own
        /// reconnection, a failed pipeline): each one starts a rejoin.
        public var mediaLost = 0
        /// `request-rejoin`s sent; rejoins that got the agent back in (new media started);
        /// rejoins given up (no accept after every attempt, or a loss rejoining cannot fix).
        public var rejoinRequests = 0
        public var rejoins = 0
        public var rejoinsFailed = 0
        /// `participant_accept_rejoin`s refused: for another device, a key that does not unwrap,
        /// or one not wrapped by a participant's published key.
        public var rejoinAcceptsRefused = 0
        /// Calls left because the agent could not get back in.
        public var callsLost = 0
    }

    /// What the agent has once it is logged in.
    struct Connections: Sendable {
        let backend: any AgentBackend
        /// nil only in tests that drive `received` directly, with no broker.
        let stomp: StompClient?
        let identity: DeviceIdentity
        let me: SessionState
        /// TURN from `/credentials` (`turns:` verified against `turn_ca_file`), fetched again
        /// before its REST credentials expire (`refreshTURN`).
        var issuedTURN = ICEServers()
        /// When to fetch them again (halfway to the expiry in a coturn REST username).
        var turnRefreshAfter: Duration = .seconds(3600)
    }

    /// idle → connecting → running → stopping → stopped. Calls are joined only while running;
    /// every method checks the state again after each `await`.
    enum State {
        case idle
        case connecting
        case running(Connections)
        /// Leaving every call; no new one is joined.
        case stopping(Connections)
        case stopped
    }

    public let config: AgentConfig
    let pipelines: PipelineLibrary
    let media: any CallMedia
    let rejoinPolicy: RejoinPolicy
    /// `--key-log`: every call key of every call, with the time it came into use.
    let keyLog: KeyLog?
    /// Tagged `component: agent`, and `ecall.user`/`ecall.device` once logged in; each call's
    /// session adds `call.id`. Keys and tokens are never logged.
    var log: Logger
    var state = State.idle
    var calls: [Int64: CallSession] = [:]
    /// Calls left (ended, cancelled): never joined again, even if still listed as active.
    var left: Set<Int64> = []
    public internal(set) var counters = Counters()
    /// Who the agent is logged in as, once it is.
    public var device: (userID: Int64, deviceID: Int64)? { connections.map { ($0.me.userId, $0.me.deviceId) } }
    /// Yields each call id the agent joined, and -id when it left it (a call that ended while
    /// being joined yields nothing: it was never joined).
    public nonisolated let events: AsyncStream<Int64>
    let eventSink: AsyncStream<Int64>.Continuation

    /// The connections while running (or stopping: keys and signals still flow while leaving).
    var connections: Connections? {
        switch state {
        case .running(let c), .stopping(let c): c
        case .idle, .connecting, .stopped: nil
        }
    }

    /// Whether calls may be joined now.
    var isRunning: Bool {
        if case .running = state { true } else { false }
    }

    /// - Parameter keyLog: where every call key goes as it comes into use (opt-in: it holds keys).
    /// `signingKey` signs every recording the agent makes (proof.jsonl and the manifest's proof).
    public init(config: AgentConfig, pipelines: PipelineLibrary, logger: Logger, keyLog: KeyLog? = nil, signingKey: SigningKey? = nil) {
        self.init(config: config, pipelines: pipelines, logger: logger, media: BotMedia(signingKey: signingKey), keyLog: keyLog)
    }

    /// `media` starts the bot in a call; tests pass one they can watch (or one that fails), and
    /// a rejoin policy with short waits.
    init(config: AgentConfig, pipelines: PipelineLibrary, logger: Logger, media: any CallMedia, rejoin: RejoinPolicy = .init(),
         keyLog: KeyLog? = nil) {
        self.config = config
        self.keyLog = keyLog
        self.pipelines = pipelines
        self.media = media
        rejoinPolicy = rejoin
        log = logger
        log[metadataKey: "component"] = "agent"
        (events, eventSink) = AsyncStream.makeStream(of: Int64.self)
    }

    /// Runs until cancelled; then leaves every call (finishing its files). Called once.
    public func run(readOTP: @Sendable () -> String? = { readLine() }) async throws(AgentError) {
        // One agent, one run: a second call is a programming error, reported, never a crash.
        guard case .idle = state else { throw .config("this agent has already run (state \(state)): make a new Agent") }
        state = .connecting
        let c: Connections
        do {
            // A bad on_invite fails now (a config error), not at the first invitation.
            _ = try config.action
            c = try await connect(readOTP: readOTP)
        } catch {
            finish()
            throw error
        }
        // Cancelled while logging in: nothing was joined yet, only STOMP to close.
        guard case .connecting = state, !Task.isCancelled else {
            await c.stomp?.close()
            return finish()
        }
        becomeRunning(c)
        if let stomp = c.stomp {
            let inbox = await stomp.subscribe("/exchange/ecall.signal.out/\(c.me.deviceId)")
            // Stopped meanwhile (tests call stop()): it leaves the calls and closes STOMP.
            guard isRunning else { return }
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
                group.addTask {
                    var delay = c.turnRefreshAfter
                    while !Task.isCancelled {
                        try? await Task.sleep(for: delay)
                        delay = await self.refreshTURN()
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        await stop()
    }

    /// Leaves every call, joined or being joined, then closes STOMP.
    func stop() async {
        guard case .running(let c) = state else { return }
        state = .stopping(c)
        // A call's leave awaits its files; the loop takes whatever is left after each.
        while let id = calls.keys.first { await leave(id, reason: "agent stopping") }
        await c.stomp?.close()
        finish()
    }

    private func finish() {
        state = .stopped
        eventSink.finish()
    }

    /// Tests: be running with these connections, with no STOMP loop and no polling.
    func attach(_ c: Connections) {
        guard case .idle = state else { return }
        becomeRunning(c)
    }

    private func becomeRunning(_ c: Connections) {
        state = .running(c)
        log[metadataKey: "ecall.user"] = "\(c.me.userId)"
        log[metadataKey: "ecall.device"] = "\(c.me.deviceId)"
    }
}
