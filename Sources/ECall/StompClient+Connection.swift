import Foundation
import Logging

/// One connection's life: connect (re-checking the state after every await), read, heart-beats,
/// renewal before the credentials expire, loss, and the reconnect loop.
extension StompClient {
    /// Starts a connect attempt and makes it the state.
    func begin(first: Bool) -> Attempt {
        nextAttempt += 1
        let a = Attempt(id: nextAttempt, first: first), id = a.id
        a.task = Task { [weak self] in await self?.run(id) ?? .failure(.closed) }
        state = .connecting(a)
        return a
    }

    /// The attempt `id` if it is still the one in flight (not closed, not replaced).
    private func current(_ id: Int) -> Attempt? {
        if case .connecting(let a) = state, a.id == id { a } else { nil }
    }

    private func run(_ id: Int) async -> Result<Void, StompError> {
        do throws(StompError) {
            try await connectOnce(id)
            return .success(())
        } catch {
            if let a = current(id) { state = a.first ? .idle : .reconnecting }
            return .failure(error)
        }
    }

    private func connectOnce(_ id: Int) async throws(StompError) {
        let c: Credentials
        do { c = try await credentials() } catch { throw current(id) == nil ? .closed : .credentials(String(describing: error)) }
        guard current(id) != nil else { throw .closed }
        let s: any StompTransport
        do { s = try await connect(options.url) } catch { throw current(id) == nil ? .closed : .unreachable(String(describing: error)) }
        guard let a = current(id) else {
            await abandon(s)
            throw .closed
        }
        a.socket = s
        parser = StompParser()
        lastHeard = .now
        let reader = Task { [weak self] in
            for await text in s.incoming { await self?.received(text, from: s) }
            await self?.lost(s)
        }
        a.reader = reader
        let ms = options.heartBeat.components.seconds * 1000 + options.heartBeat.components.attoseconds / 1_000_000_000_000_000
        // The passcode is on the wire only: this frame is never logged.
        s.send(StompFrame("CONNECT", [
            ("accept-version", "1.2"), ("host", options.host), ("login", c.login), ("passcode", c.passcode), ("heart-beat", "\(ms),\(ms)"),
        ]).encoded)
        let timeout = options.connectTimeout
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            await self?.timedOut(id)
        }
        let connected: StompFrame
        do {
            connected = try await withCheckedThrowingContinuation { (w: CheckedContinuation<StompFrame, any Error>) in
                if let early = a.early { w.resume(with: early.mapError { $0 as any Error }) } else { a.waiter = w }
            }
        } catch {
            timer.cancel()
            reader.cancel()
            await abandon(s)
            throw error as? StompError ?? .unreachable(String(describing: error))
        }
        timer.cancel()
        guard current(id) != nil else {
            reader.cancel()
            s.send(StompFrame("DISCONNECT").encoded)
            await abandon(s)
            throw .closed
        }
        established(s, reader: reader, connected: connected, heartBeatMs: Int(ms), expires: c.expires)
    }

    /// Closes a socket this client will not use.
    private func abandon(_ s: any StompTransport) async {
        s.close()
        await s.closed()
    }

    private func timedOut(_ id: Int) {
        current(id)?.resume(.failure(.unreachable("no CONNECTED within \(options.connectTimeout)")))
    }

    /// CONNECTED came: the state becomes connected, and the subscriptions are sent with no
    /// await in between (so none is missed or sent twice).
    private func established(_ s: any StompTransport, reader: Task<Void, Never>, connected: StompFrame, heartBeatMs ms: Int, expires: Date?) {
        counters.connections += 1
        // heart-beat: server's "sx,sy"; we send every max(ours, sy), expect every max(sx, ours).
        let server = (connected["heart-beat"] ?? "0,0").split(separator: ",").compactMap { Int($0) }
        let sx = server.first ?? 0, sy = server.count > 1 ? server[1] : 0
        let sendEvery = sy == 0 ? 0 : max(ms, sy), expectEvery = sx == 0 ? 0 : max(ms, sx)
        var tasks = [reader, Task { [weak self] in await self?.heartBeats(on: s, every: sendEvery, expect: expectEvery) }]
        if let expires {
            let renewAt = expires.addingTimeInterval(-Double(options.renewBefore.components.seconds))
            tasks.append(Task { [weak self] in
                try? await Task.sleep(for: .seconds(max(1, renewAt.timeIntervalSinceNow)))
                guard !Task.isCancelled else { return }
                await self?.renew(s)
            })
        }
        state = .connected(Connection(socket: s, tasks: tasks))
        for (id, sub) in subscriptions.sorted(by: { $0.key < $1.key }) { s.send(Self.subscribeFrame(id, sub.destination)) }
        log.info("STOMP connected to \(options.url) (heart-beats: send \(sendEvery) ms, expect \(expectEvery) ms)")
        connectionsSink.yield(counters.connections)
    }

    private func isCurrent(_ s: any StompTransport) -> Bool {
        switch state {
        case .connected(let c): c.socket === s
        case .connecting(let a): a.socket === s
        default: false
        }
    }

    private func renew(_ s: any StompTransport) {
        guard case .connected(var c) = state, c.socket === s else { return }
        c.renewing = true
        state = .connected(c)
        log.info("STOMP credentials expire soon: reconnecting with fresh ones")
        s.send(StompFrame("DISCONNECT").encoded)
        s.close()
    }

    private func heartBeats(on s: any StompTransport, every sendMs: Int, expect expectMs: Int) async {
        let tick = max(200, min(sendMs == 0 ? 5000 : sendMs, expectMs == 0 ? 5000 : expectMs) / 2)
        var lastSent = ContinuousClock.now
        while !Task.isCancelled, isCurrent(s) {
            try? await Task.sleep(for: .milliseconds(tick))
            guard isCurrent(s) else { return }
            if sendMs > 0, ContinuousClock.now - lastSent >= .milliseconds(sendMs) {
                s.send("\n")
                lastSent = .now
            }
            // Nothing heard for twice the agreed interval: the connection is dead.
            if expectMs > 0, ContinuousClock.now - lastHeard > .milliseconds(2 * expectMs) {
                log.warning("STOMP: no heart-beat from the server for \(2 * expectMs) ms, reconnecting")
                s.close()
                return
            }
        }
    }

    private func received(_ text: String, from s: any StompTransport) {
        // A socket we have left behind may still deliver: not ours any more.
        guard isCurrent(s) else { return }
        lastHeard = .now
        for event in parser.append(text.utf8) {
            switch event {
            case .heartBeat: counters.heartBeatsReceived += 1
            case .malformed(let m):
                counters.malformedFrames += 1
                log.warning("STOMP: dropped a \(m)")
            case .frame(let f): handle(f)
            }
        }
    }

    private func handle(_ f: StompFrame) {
        switch f.command {
        case "CONNECTED":
            if case .connecting(let a) = state { a.resume(.success(f)) }
        case "MESSAGE":
            counters.messages += 1
            guard let id = f["subscription"], let sub = subscriptions[id] else {
                log.warning("STOMP: a MESSAGE for no subscription of ours (\(f["subscription"] ?? "none")), dropped")
                return
            }
            sub.sink.yield(f)
        case "ERROR":
            counters.errorFrames += 1
            let message = f["message"] ?? String(decoding: f.body.prefix(200), as: UTF8.self)
            log.error("STOMP server error: \(message)")
            if case .connecting(let a) = state { a.resume(.failure(.refused(message))) }
        case "RECEIPT":
            break
        default:
            counters.malformedFrames += 1
            log.warning("STOMP: unknown frame \(f.command.prefix(32)), dropped")
        }
    }

    private func lost(_ s: any StompTransport) {
        switch state {
        case .connecting(let a) where a.socket === s:
            a.resume(.failure(.unreachable("the connection closed before CONNECTED")))
        case .connected(let c) where c.socket === s:
            c.cancel()
            state = .reconnecting
            lostSignal.continuation.yield(c.renewing)
        default:
            break
        }
    }

    /// After each drop: reconnect, at once after a renewal, else after 1 s doubling to 30 s,
    /// until it works or the client is closed. Only from `.reconnecting`: a connection made
    /// meanwhile by someone else is not made twice.
    func keepConnected() async {
        for await planned in lostSignal.stream {
            var delay = planned ? Duration.zero : .seconds(1)
            while case .reconnecting = state, !Task.isCancelled {
                if delay > .zero {
                    log.info("STOMP: connection lost, reconnecting in \(delay)")
                    try? await Task.sleep(for: delay)
                }
                guard case .reconnecting = state, !Task.isCancelled else { break }
                let a = begin(first: false)
                if case .failure(let error) = await a.task?.value ?? .failure(.closed) {
                    log.warning("STOMP: reconnect failed: \(error)")
                    delay = min(max(delay * 2, .seconds(1)), .seconds(30))
                }
            }
            if case .closed = state { return }
        }
    }
}
