import Comeback
import Foundation
import Logging

/// A dropped connection under an open session: reconnect with backoff and `claim` the session
/// (ECALL-WIRE §6, what ECall phones do), so handles and PeerConnections survive a WebSocket
/// that a proxy, a NAT or `ss -K` cut. Janus keeps such a session only for its
/// `reclaim_session_timeout`; when it refuses the claim the session ends, and participants
/// rejoin on a new one.
extension JanusSession {
    func connectionLost(generation: Int) {
        // The reader of a connection already replaced: nothing of ours ended.
        guard generation == self.generation else { return }
        // The transport closed it because Janus broke a limit: pending requests fail with that.
        let violation = transport.violation
        switch state {
        case .open(let id) where violation == nil && connector != nil && options.reclaimWindow > .zero:
            connectionDrops += 1
            lastConnectionDrop = Date()
            JanusMetrics.reconnecting()
            logger.warning("connection to Janus lost; reconnecting to claim the session")
            state = .reconnecting(id: id)
            // What was in flight is lost with the connection; Janus may or may not have done it.
            failPending(.disconnected)
            transport.close()
            reconnecting = Task { await self.reclaim(id: id) }
            return
        case .reconnecting:
            // A connection made for the claim dropped: the claim fails, the loop tries again.
            failPending(.disconnected)
            return
        case .connecting, .open:
            if case .open = state {
                connectionDrops += 1
                lastConnectionDrop = Date()
            }
            if let violation { logger.error("connection to Janus closed: Janus sent \(violation)") } else { logger.warning("connection to Janus lost") }
        case .closing, .closed: break  // expected while and after closing
        }
        shutDown(.connectionLost, failing: violation.map { .protocolViolation("\($0); the connection was closed") } ?? .disconnected)
    }

    /// Reconnects with backoff and claims session `id` until `reclaimWindow` has passed, Janus
    /// refuses the claim, or the session is closed: the shared comeback driver, on the
    /// session's clock (`Options.clock`; a test's manual clock moves it on).
    private func reclaim(id: Int64) async { await reclaim(id: id, on: options.clock) }

    private var isReconnecting: Bool {
        if case .reconnecting = state { return true }
        return false
    }

    private func reclaim<C: Clock>(id: Int64, on clock: C) async where C.Duration == Duration {
        guard let connector else { return }
        var machine = ComebackMachine<C.Instant, JanusError>(ComebackPolicy(backoff: options.backoff, deadline: options.reclaimWindow))
        let first = machine.handle(.lost(), at: clock.now)
        // A Janus error is Janus's answer to the claim (458: no such session): no retry heals it.
        let outcome = await machine.run(from: first, on: clock, stillWanted: { self.isReconnecting },
                                        isWorthRetrying: { $0.janusCode == nil }) { (n: Int) async throws(JanusError) in
            try await claim(id: id, attempt: n, over: connector)
        }
        switch outcome {
        case .back(_, let attempt):
            let gap = machine.lossStarted.map { $0.duration(to: clock.now) } ?? .zero
            logger.info("claimed the Janus session again after \(gap.formatted(.units(allowed: [.seconds, .milliseconds])))",
                        metadata: ["janus.attempt": "\(attempt)"])
        case .gaveUp(let last, let attempts):
            guard isReconnecting else { return }
            if let last, last.janusCode != nil {
                logger.warning("Janus did not give the session back (\(last)): it is gone with its handles",
                               metadata: ["janus.attempt": "\(attempts)"])
                shutDown(.notReclaimed)
            } else {
                logger.warning("gave up reconnecting to Janus after \(attempts) attempt(s) in \(options.reclaimWindow)")
                shutDown(.connectionLost)
            }
        case .stopped: return
        }
    }

    /// One attempt: a new connection, then `claim`. The session is open again when it returns;
    /// a session closed meanwhile fails it (the driver then stops, as the session is not wanted).
    private func claim(id: Int64, attempt: Int, over connector: Connector) async throws(JanusError) {
        let fresh: any JanusTransport
        do { fresh = try await connector() } catch {
            logger.debug("reconnecting to Janus: \(error)", metadata: ["janus.attempt": "\(attempt)"])
            throw error
        }
        guard isReconnecting else {
            fresh.close()
            throw .disconnected
        }
        transport = fresh
        generation += 1
        startReading()
        do {
            _ = try await request(JanusRequest("claim", transaction: "", sessionID: id), expect: .result)
        } catch {
            if error.janusCode == nil { logger.debug("claiming the session: \(error)", metadata: ["janus.attempt": "\(attempt)"]) }
            throw error
        }
        guard isReconnecting else { throw .disconnected }
        state = .open(id: id)
        reclaims += 1
        JanusMetrics.reclaimed()
        let waiting = reopenWaiters
        reopenWaiters.removeAll()
        for (_, w) in waiting { w.resume() }
        for (_, c) in handles { c.yield(.reclaimed) }
    }

    /// Requests made while reconnecting wait for the claim, at most one request timeout; a
    /// cancelled task (a job stopping) does not wait.
    func waitIfReconnecting() async throws(JanusError) {
        guard case .reconnecting = state else { return }
        guard !Task.isCancelled else { throw .disconnected }
        nextTransaction += 1
        let key = nextTransaction, timeout = options.requestTimeout
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.reopenWaiters.removeValue(forKey: key)?.resume(throwing: JanusError.disconnected) }
        }
        defer { timer.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in reopenWaiters[key] = c }
            } onCancel: {
                Task { await self.abandonWait(key) }
            }
        } catch {
            throw .disconnected
        }
    }

    private func abandonWait(_ key: Int) {
        reopenWaiters.removeValue(forKey: key)?.resume(throwing: JanusError.disconnected)
    }
}
