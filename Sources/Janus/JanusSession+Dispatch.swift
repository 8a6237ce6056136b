import Foundation
import Logging

/// Requests and replies: transactions, timeouts, and the routing of Janus's messages to the
/// request that waits for them or to the handle they are about.
extension JanusSession {
    /// Whether `verb` may go out in the current state: only `create` while connecting, only
    /// `destroy` while closing, nothing once closed.
    private func accepts(_ verb: String) -> Bool {
        switch state {
        case .connecting: verb == "create"
        case .open: verb != "create"
        case .closing: verb == "destroy"
        case .closed: false
        }
    }

    func request(_ r: JanusRequest, expect: Expect) async throws(JanusError) -> JanusMessage {
        guard accepts(r.janus) else { throw .disconnected }
        var r = r
        nextTransaction += 1
        let transaction = "t\(nextTransaction)"
        r.transaction = transaction
        r.apisecret = options.apiSecret
        r.token = options.token
        let text: String
        do { text = String(decoding: try JSONEncoder().encode(r), as: UTF8.self) } catch { throw .protocolViolation("cannot encode \(r.janus)") }
        // The verb only: the JSON carries the apisecret and token.
        logger.trace("janus →", metadata: ["janus.request": "\(r.janus)", "janus.transaction": "\(transaction)"])
        let timeout = options.requestTimeout
        let verb = r.janus
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.fail(transaction, with: .timeout(request: verb)) }
        }
        defer { timer.cancel() }
        do {
            return try await withCheckedThrowingContinuation { c in
                pending[transaction] = Pending(expect: expect, continuation: c)
                transport.send(text)
            }
        } catch let e as JanusError {
            throw e
        } catch {
            throw .protocolViolation(String(describing: error))
        }
    }

    private func fail(_ transaction: String, with error: JanusError) {
        pending.removeValue(forKey: transaction)?.continuation.resume(throwing: error)
    }

    func dispatch(_ text: String) {
        // Inbound only, at trace: it holds SDP but never our apisecret or token.
        logger.trace("janus ←", metadata: ["janus.json": "\(text)"])
        let message: JanusMessage
        do { message = try JSONDecoder().decode(JanusMessage.self, from: Data(text.utf8)) } catch {
            ignoredMessages += 1
            logger.warning("ignoring malformed message from Janus (\(text.utf8.count) bytes)")
            return
        }
        if let t = message.transaction, let p = pending[t] {
            switch message.janus {
            case "ack" where p.expect == .result:
                return  // an asynchronous plugin request: its event follows
            case "error":
                pending.removeValue(forKey: t)
                p.continuation.resume(throwing: JanusError.janus(code: message.error?.code ?? 0, reason: message.error?.reason ?? "unknown"))
                return
            case "ack", "success", "event":
                pending.removeValue(forKey: t)
                p.continuation.resume(returning: message)
                return
            default:
                break  // e.g. a trickle or webrtcup that carries the transaction: an event
            }
        }
        guard let event = Self.handleEvent(from: message) else {
            if message.janus == "timeout" {
                logger.error("Janus timed the session out")
                shutDown(.timedOutByJanus)
            } else if message.janus != "ack" {
                ignoredMessages += 1
                logger.debug("ignoring Janus message '\(message.janus)'")
            }
            return
        }
        guard let sender = message.sender, let c = handles[sender] else {
            ignoredMessages += 1
            logger.debug("Janus '\(message.janus)' for an unknown handle", metadata: ["janus.handle": "\(message.sender ?? 0)"])
            return
        }
        c.yield(event)
        if case .detached = event { handles.removeValue(forKey: sender)?.finish() }
    }

    static func handleEvent(from m: JanusMessage) -> HandleEvent? {
        switch m.janus {
        case "event":
            guard let d = m.plugindata?.data else { return nil }
            return .plugin(data: d, jsep: m.jsep)
        case "trickle":
            guard let c = m.candidate else { return nil }
            if c["completed"]?.bool == true { return .trickle(mline: 0, candidate: nil) }
            guard let text = c["candidate"]?.string else { return nil }
            return .trickle(mline: Int(c["sdpMLineIndex"]?.int ?? 0), candidate: text)
        case "webrtcup": return .webrtcUp
        case "media": return .media(type: m.type ?? "?", receiving: m.receiving ?? false)
        case "hangup": return .hangup(reason: m.reason ?? "")
        case "slowlink": return .slowLink
        case "detached": return .detached
        default: return nil
        }
    }

    func connectionLost() {
        switch state {
        case .connecting, .open: logger.warning("connection to Janus lost")
        case .closing, .closed: break  // expected while and after closing
        }
        shutDown(.connectionLost)
    }

    /// Moves to `closed` once: fails what is pending, ends every handle's events, closes the
    /// transport. Later calls keep the first reason.
    func shutDown(_ reason: CloseReason) {
        if case .closed = state { return }
        state = .closed(reason)
        keepalive?.cancel()
        for (_, p) in pending { p.continuation.resume(throwing: JanusError.disconnected) }
        pending.removeAll()
        for (_, c) in handles { c.finish() }
        handles.removeAll()
        transport.close()
    }
}
