public import Bot
public import ECall
public import FrameCrypto
public import Foundation
import Janus
public import Logging

/// `sfubot agent`: a full ECall participant. It logs in with its device identity, listens for
/// invitations (STOMP, and polling `GET /call/active`), unwraps the call key, joins the Janus
/// room and records (or plays), follows key rotations from the key host, asks for the key when
/// frames stop opening, and leaves when the call ends. It sends only message types the apps know.
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

    public let config: AgentConfig
    private let pipelines: PipelineLibrary
    private let log: Logger
    private var client: ECallClient?
    private var stomp: StompClient?
    private var identity: DeviceIdentity?
    private var me: SessionState?
    private var calls: [Int64: CallSession] = [:]
    /// Calls left (ended, cancelled): never joined again, even if still listed as active.
    private var left: Set<Int64> = []
    private var turnServers: [String] = []
    public private(set) var counters = Counters()
    /// Who the agent is logged in as, once it is.
    public var device: (userID: Int64, deviceID: Int64)? { me.map { ($0.userId, $0.deviceId) } }
    /// Yields each call id the agent joined, and -id when it left it.
    public nonisolated let events: AsyncStream<Int64>
    private let eventSink: AsyncStream<Int64>.Continuation

    public init(config: AgentConfig, pipelines: PipelineLibrary, logger: Logger) {
        self.config = config
        self.pipelines = pipelines
        log = logger
        (events, eventSink) = AsyncStream.makeStream(of: Int64.self)
    }

    /// Runs until cancelled; then leaves every call (finishing its files).
    public func run(readOTP: @Sendable () -> String? = { readLine() }) async throws(AgentError) {
        try await connect(readOTP: readOTP)
        guard let stomp, let me else { return }
        let inbox = await stomp.subscribe("/exchange/ecall.signal.out/\(me.deviceId)")
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

    // MARK: - Login and connections

    private func connect(readOTP: @Sendable () -> String?) async throws(AgentError) {
        let identity: DeviceIdentity
        do { identity = try DeviceIdentity(contentsOfFile: config.identity) } catch { throw .identity(error.description) }
        self.identity = identity
        let client: ECallClient
        do {
            client = try ECallClient(configuration: .init(baseURL: config.api, apiID: config.apiId, apiSecret: config.apiSecret, sessionFile: config.session), logger: log)
        } catch { throw .backend(error.description) }
        self.client = client
        do {
            if await client.session == nil {
                let who = LoginIdentity(email: config.email, phoneNumber: config.phoneNumber, displayName: config.displayName,
                                        publicKey: identity.publicKey.wire, identifier: "sfubot-\(identity.publicKey.hash.prefix(16))")
                _ = try await client.login(who)
                let code = config.otp ?? {
                    FileHandle.standardError.write(Data("sfubot agent: the login code sent to \(config.email ?? config.phoneNumber ?? ""): ".utf8))
                    return readOTP()?.trimmingCharacters(in: .whitespaces)
                }() ?? ""
                _ = try await client.verifyLogin(code: code, who)
            }
            try await client.registerDevice(publicKey: identity.publicKey.wire, publicKeyHash: identity.publicKey.hash)
        } catch { throw .backend(error.description) }
        guard let me = await client.session else { throw .backend("no session after login") }
        self.me = me
        let credentials: Credentials
        do { credentials = try await client.credentials() } catch { throw .backend(error.description) }
        turnServers = Self.turnServers(credentials)
        // ECALL-WIRE does not say what tlsUrl/noneTlsUrl address: TURN when they are turn(s): URIs,
        // the Web-STOMP endpoint when they are ws(s): URLs (the stand-in's). `stomp` in the config wins.
        let url = config.stomp ?? [credentials.tlsUrl, credentials.noneTlsUrl].compactMap { $0 }.first { $0.hasPrefix("ws") } ?? ""
        guard !url.isEmpty else { throw .config("no Web-STOMP URL: set stomp in the config") }
        let stomp = StompClient(options: .init(url: url, host: "ecall"), logger: log) {
            let c = try await client.credentials()
            return .init(login: "device-\(me.deviceId)", passcode: c.rabbitmqToken, expires: c.rabbitmqTokenExpiresAt.map(Date.init(timeIntervalSince1970:)))
        }
        do { try await stomp.start() } catch { throw .stomp(error.description) }
        self.stomp = stomp
        log.info("agent up: user \(me.userId), device \(me.deviceId) (\(identity.kind.rawValue) key \(identity.publicKey.hash.prefix(16))…)")
    }

    /// `/credentials`' TURN fields as webrtcbin TURN URIs: `turn:host:port` → `turn://user:password@host:port`.
    static func turnServers(_ c: Credentials) -> [String] {
        guard let user = c.turnUsername, let password = c.turnPassword, !user.isEmpty else { return [] }
        let escape = { (s: String) in s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s }
        return [c.noneTlsUrl, c.tlsUrl].compactMap { $0 }.compactMap { url -> String? in
            for scheme in ["turns", "turn"] where url.hasPrefix(scheme + ":") {
                let rest = url.dropFirst(scheme.count + 1).drop { $0 == "/" }.split(separator: "?").first.map(String.init) ?? ""
                return rest.isEmpty ? nil : "\(scheme)://\(escape(user)):\(escape(password))@\(rest)"
            }
            return nil
        }
    }

    private func pollActiveCalls() async {
        guard let client else { return }
        do {
            for call in try await client.activeCalls() where calls[call.id] == nil {
                guard let wrapped = call.encryptedAESKey, let room = call.janusRoomId ?? call.roomId else { continue }
                await join(callID: call.id, roomID: room, wrappedKey: wrapped)
            }
        } catch {
            log.warning("could not poll active calls: \(error)")
        }
    }

    // MARK: - Calls

    private func join(callID: Int64, roomID: Int64, wrappedKey: String) async {
        guard calls[callID] == nil, !left.contains(callID), let identity, let client, let me else { return }
        let key: CallKey
        do { key = try KeyWrap.unwrap(wrappedKey, with: identity).key } catch {
            log.error("invitation to call \(callID): \(error)")
            return
        }
        let session = CallSession(callID: callID, roomID: roomID, key: key)
        calls[callID] = session
        await refreshHost(session)
        do { _ = try await client.join(callID: callID) } catch { log.warning("call \(callID): join not acknowledged: \(error)") }
        var bot = BotConfig(janusURL: config.janus, room: roomID, display: "\(me.userId):\(config.displayName)", protection: .e2ee(session.ring),
                            janus: JanusSession.Options(apiSecret: config.janusApiSecret), pipelines: pipelines, logger: log)
        bot.onKeyMissing = { [weak self] _ in Task { await self?.keyMissing(callID: callID) } }
        bot.turnServers = turnServers
        let log = self.log
        let action: AgentConfig.InviteAction
        do { action = try config.action } catch { log.error("\(error)"); return }
        session.setMedia(Task {
            do {
                switch action {
                case .record(let dir):
                    let out = URL(fileURLWithPath: dir).appendingPathComponent(String(callID))
                    let manifest = try await Recorder(config: bot, directory: out).run()
                    log.info("call \(callID): \(manifest.feeds.count) track(s) recorded in \(out.path)")
                case .play(let file):
                    _ = try await Player(config: bot, file: file, loop: true).run()
                }
            } catch {
                if !Task.isCancelled { log.error("call \(callID): \(error)") }
            }
        })
        counters.callsJoined += 1
        eventSink.yield(callID)
        log.info("joined call \(callID) in room \(roomID)")
    }

    private func leave(_ callID: Int64, reason: String) async {
        guard let session = calls.removeValue(forKey: callID) else { return }
        left.insert(callID)
        log.info("leaving call \(callID): \(reason)")
        await session.end()
        counters.callsEnded += 1
        eventSink.yield(-callID)
    }

    /// The key host (participant with `isHostKey`) and its published device key.
    private func refreshHost(_ session: CallSession) async {
        guard let client else { return }
        do {
            guard let host = try await client.participants(callID: session.callID).first(where: { $0.isHostKey == true }),
                  let device = host.deviceId else { return }
            let keys = try await client.publicKeys(userIDs: [host.userId])
            session.host = .init(userID: host.userId, deviceID: device, publicKey: keys["\(host.userId)_\(device)"].flatMap { try? DevicePublicKey(wire: $0) })
        } catch {
            log.warning("call \(session.callID): could not learn the key host: \(error)")
        }
    }

    // MARK: - Signals

    func received(_ body: Data) async {
        counters.signals += 1
        let m: SignalMessage
        do { m = try SignalMessage.parse(body) } catch {
            if case .unknownType = error { counters.unknownSignals += 1 } else { counters.malformedSignals += 1 }
            log.warning("dropped a signal message: \(error)")
            return
        }
        guard let kind = m.kind else { return }
        if kind == .callInvitation {
            if let id = m.callId, let room = m.roomId, let key = m.encryptedAESKey { await join(callID: id, roomID: room, wrappedKey: key) }
            return
        }
        guard let id = m.callId, let session = calls[id] else {
            counters.otherCalls += 1
            log.info("\(m.type) for call \(m.callId.map(String.init) ?? "none"), which the agent is not in: ignored")
            return
        }
        switch kind {
        case .keyRotation: await takeKey(m, session, rotation: true)
        case .sendAESKey: await takeKey(m, session, rotation: false)
        case .callEnded, .callCancelled: await leave(id, reason: m.type)
        case .handoverHost: await handover(to: m.participantId, session)
        case .participantJoined, .participantLeft, .participantUpdated:
            if !isHost(session) { await refreshHost(session) }
        case .requestAESKey: await answerKeyRequest(m, session)
        case .participantRequestRejoin: await acceptRejoin(m, session)
        default: break
        }
    }

    /// A key from `key_rotation` (applied at its timestamp) or `send_aes_key` (at once), taken
    /// only if the current key host wrapped it: the apps do not authenticate the sender key
    /// embedded in a P-256 wrapping, so it must be the host's published key.
    private func takeKey(_ m: SignalMessage, _ session: CallSession, rotation: Bool) async {
        guard let identity, let wrapped = m.encryptedAESKey else { return }
        if session.host == nil { await refreshHost(session) }
        let unwrapped: KeyWrap.Unwrapped
        do { unwrapped = try KeyWrap.unwrap(wrapped, with: identity) } catch {
            refuse(m, session, "\(error)")
            return
        }
        guard let host = session.host else { return refuse(m, session, "the call's key host is unknown") }
        let fromHost = if let sender = unwrapped.sender { sender == host.publicKey } else { m.senderId == host.userID && m.senderDeviceId == host.deviceID }
        guard fromHost else { return refuse(m, session, "not wrapped by the key host's published key") }
        if rotation {
            let at = m.keyRotationTimestamp ?? Date().timeIntervalSince1970
            session.ring.schedule(unwrapped.key, at: at)
            counters.rotationsApplied += 1
            log.info("call \(session.callID): key rotation accepted, current from \(Date(timeIntervalSince1970: at))")
        } else {
            session.ring.setCurrent(unwrapped.key)
            session.keyArrived()
            counters.keysReceived += 1
            log.info("call \(session.callID): call key received from the key host")
        }
    }

    private func refuse(_ m: SignalMessage, _ session: CallSession, _ why: String) {
        counters.rotationsRefused += 1
        log.warning("call \(session.callID): refused \(m.type) from user \(m.senderId.map(String.init) ?? "?"): \(why); the key did not change")
    }

    /// A frame of the call did not open with any key: ask the key host (`request_aes_key`).
    func keyMissing(callID: Int64) async {
        guard let session = calls[callID], let me, let host = session.host, host.userID != me.userId else { return }
        guard session.shouldRequestKey() else { return }
        var m = SignalMessage(type: .requestAESKey)
        m.callId = callID
        m.participantId = host.userID
        m.participantDeviceId = host.deviceID
        m.senderId = me.userId
        m.senderDeviceId = me.deviceId
        await send(m)
        counters.keyRequestsSent += 1
        log.info("call \(callID): frames do not open, asked the key host for the call key")
    }

    private func send(_ m: SignalMessage) async {
        guard let stomp, let client, let token = await client.session?.accessToken else { return }
        do {
            try await stomp.send("/exchange/ecall.signal.in", body: m.json, headers: [("content-type", "application/json"), ("authorization", "Bearer \(token)")])
        } catch {
            log.warning("could not send \(m.type): \(error)")
        }
    }

    // MARK: - Key host

    private func isHost(_ session: CallSession) -> Bool { session.host?.userID == me?.userId && me != nil }

    /// `handover_host`: the participant named is the key host from now on. When it is this
    /// agent, it starts rotating the key.
    private func handover(to userID: Int64?, _ session: CallSession) async {
        guard let userID, let client, let me, let identity else { return }
        if userID == me.userId {
            session.host = .init(userID: me.userId, deviceID: me.deviceId, publicKey: identity.publicKey)
            log.info("call \(session.callID): this agent is the key host now")
            session.setRotation(Task { [weak self] in await self?.rotateKeys(session) })
            return
        }
        do {
            guard let p = try await client.participants(callID: session.callID).first(where: { $0.userId == userID }), let device = p.deviceId else { return }
            let key = try await client.publicKeys(userIDs: [userID])["\(userID)_\(device)"]
            session.host = .init(userID: userID, deviceID: device, publicKey: key.flatMap { try? DevicePublicKey(wire: $0) })
            session.setRotation(nil)
        } catch {
            log.warning("call \(session.callID): could not learn the new key host: \(error)")
        }
    }

    /// The call key wrapped for one participant's device, from its published key.
    private func wrapped(_ key: CallKey, for userID: Int64, device: Int64) async -> String? {
        guard let client, let identity else { return nil }
        do {
            guard let wire = try await client.publicKeys(userIDs: [userID])["\(userID)_\(device)"] else {
                log.warning("no published key for user \(userID) device \(device)")
                return nil
            }
            return try KeyWrap.wrap(key, for: try DevicePublicKey(wire: wire), from: identity)
        } catch {
            log.warning("cannot wrap the call key for user \(userID): \(error)")
            return nil
        }
    }

    /// A message carrying the call key wrapped for one participant's device, from this agent.
    private func keyMessage(_ kind: SignalMessage.Kind, _ box: String, to user: Int64, device: Int64, _ session: CallSession, from me: SessionState) -> SignalMessage {
        var m = SignalMessage(type: kind)
        m.callId = session.callID
        m.encryptedAESKey = box
        m.participantId = user
        m.participantDeviceId = device
        m.senderId = me.userId
        m.senderDeviceId = me.deviceId
        return m
    }

    /// As host: `request_aes_key` is answered with `send_aes_key` carrying the current key.
    private func answerKeyRequest(_ m: SignalMessage, _ session: CallSession) async {
        guard isHost(session), let me, let user = m.senderId, let device = m.senderDeviceId, let key = session.ring.sealingKey,
              let box = await wrapped(key, for: user, device: device) else { return }
        await send(keyMessage(.sendAESKey, box, to: user, device: device, session, from: me))
        counters.keysSent += 1
        log.info("call \(session.callID): sent the call key to user \(user) (request_aes_key)")
    }

    /// Every connected participant answers a rejoin request with the key for the rejoiner.
    private func acceptRejoin(_ m: SignalMessage, _ session: CallSession) async {
        guard let me, let user = m.participantId, let device = m.calleeDeviceId ?? m.participantDeviceId, user != me.userId,
              let key = session.ring.sealingKey, let box = await wrapped(key, for: user, device: device) else { return }
        var answer = keyMessage(.participantAcceptRejoin, box, to: user, device: device, session, from: me)
        answer.calleeId = user
        answer.calleeDeviceId = device
        await send(answer)
        counters.keysSent += 1
    }

    /// As host: a new key every `rotation_seconds` (300), sent to every other participant as
    /// `key_rotation`, current 10 s later for everybody, this agent included.
    private func rotateKeys(_ session: CallSession) async {
        let every = Duration.milliseconds(Int64((config.rotationSeconds ?? 300) * 1000))
        while !Task.isCancelled {
            try? await Task.sleep(for: every)
            guard !Task.isCancelled, isHost(session), let client, let me else { return }
            let key = CallKey.random(), at = Date().timeIntervalSince1970 + 10
            do {
                for p in try await client.participants(callID: session.callID) where p.userId != me.userId && p.status != "left" {
                    guard let device = p.deviceId, let box = await wrapped(key, for: p.userId, device: device) else { continue }
                    var m = keyMessage(.keyRotation, box, to: p.userId, device: device, session, from: me)
                    m.keyRotationTimestamp = at
                    await send(m)
                }
                session.ring.schedule(key, at: at)
                counters.rotationsMade += 1
                log.info("call \(session.callID): rotated the call key (current from \(Date(timeIntervalSince1970: at)))")
            } catch {
                log.warning("call \(session.callID): key rotation failed: \(error)")
            }
        }
    }
}
