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
        case .open: verb != "create" && verb != "claim"
        case .reconnecting: verb == "claim"
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
                pending[transaction] = Pending(expect: expect, handle: r.handleID, continuation: c)
                transport.send(text)
            }
        } catch let e as JanusError {
            throw e
        } catch {
            throw .protocolViolation(String(describing: error))
        }
    }

    /// Fails every request waiting for a reply (their connection is gone).
    func failPending(_ error: JanusError) {
        let waiting = pending
        pending.removeAll()
        for (_, p) in waiting { p.continuation.resume(throwing: error) }
    }

    private func fail(_ transaction: String, with error: JanusError) {
        pending.removeValue(forKey: transaction)?.continuation.resume(throwing: error)
    }

    func dispatch(_ text: String) {
        // Inbound only, at trace: it holds SDP but never our apisecret or token.
        logger.trace("janus ←", metadata: ["janus.json": "\(text)"])
        guard text.utf8.count <= Self.maxMessageBytes else {
            return ignore("ignoring a message of \(text.utf8.count) bytes from Janus, over the \(Self.maxMessageBytes) byte limit", level: .warning)
        }
        let message: JanusMessage
        do { message = try JSONDecoder().decode(JanusMessage.self, from: Data(text.utf8)) } catch {
            return ignore("ignoring malformed message from Janus (\(text.utf8.count) bytes)", level: .warning)
        }
        // Every message about a session must be about ours: another session's `timeout` (a
        // proxy mixing sessions up, or a forged message) must not end this one. Before
        // `create` answered (id 0) there is no id to compare with.
        if let sid = message.sessionID, id != 0, sid != id {
            return ignore("ignoring Janus '\(message.janus)' for another session", level: .warning, ["janus.other_session": "\(sid)"])
        }
        if let t = message.transaction, let p = pending[t] {
            if let sender = message.sender, let handle = p.handle, sender != handle {
                return ignore("ignoring a reply from handle \(sender) to a request on another handle", level: .warning)
            }
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
                // Janus names the session it timed out; before `create` answered there is none to end.
                guard message.sessionID != nil, id != 0 else {
                    return ignore("ignoring a Janus 'timeout' without our session id", level: .warning)
                }
                logger.error("Janus timed the session out")
                shutDown(.timedOutByJanus)
            } else if message.janus == "trickle" {
                ignore("ignoring a Janus candidate without text or with an sdpMLineIndex outside 0…\(Self.maxMLineIndex)", level: .warning,
                       ["janus.handle": "\(message.sender ?? 0)"])
            } else if message.janus != "ack" {
                ignore("ignoring Janus message '\(message.janus)'", level: .debug)
            }
            return
        }
        guard let sender = message.sender, let c = handles[sender] else {
            return ignore("Janus '\(message.janus)' for an unknown handle", level: .debug, ["janus.handle": "\(message.sender ?? 0)"])
        }
        c.yield(event)
        if case .detached = event { handles.removeValue(forKey: sender)?.finish() }
    }

    private func ignore(_ line: Logger.Message, level: Logger.Level, _ metadata: Logger.Metadata? = nil) {
        ignoredMessages += 1
        logger.log(level: level, line, metadata: metadata)
    }

    /// The highest m-line index accepted in a remote candidate: far above any real SDP (one
    /// m-line per stream), far below what a C `guint` conversion would trap on.
    static let maxMLineIndex: Int64 = 1024

    /// The handle event a message carries; nil when it is none, or when its numbers are out
    /// of range (then it is counted as ignored).
    static func handleEvent(from m: JanusMessage) -> HandleEvent? {
        switch m.janus {
        case "event":
            guard let d = m.plugindata?.data else { return nil }
            return .plugin(data: d, jsep: m.jsep)
        case "trickle":
            guard let c = m.candidate else { return nil }
            if c["completed"]?.bool == true { return .trickle(mline: 0, candidate: nil) }
            guard let text = c["candidate"]?.string else { return nil }
            // Absent means the first m-line (what Janus's bundled offers use); anything but a
            // whole number in range (−1, 5e9, 1.5, "x") drops the candidate.
            let raw = c["sdpMLineIndex"] ?? .int(0)
            guard let mline = raw.int, (0...maxMLineIndex).contains(mline) else { return nil }
            return .trickle(mline: Int(mline), candidate: text)
        case "webrtcup": return .webrtcUp
        case "media": return .media(type: m.type ?? "?", receiving: m.receiving ?? false)
        case "hangup": return .hangup(reason: m.reason ?? "")
        case "slowlink": return .slowLink
        case "detached": return .detached
        default: return nil
        }
    }

    /// Moves to `closed` once: fails what is pending, ends every handle's events, closes the
    /// transport. Later calls keep the first reason.
    func shutDown(_ reason: CloseReason, failing error: JanusError = .disconnected) {
        if case .closed = state { return }
        state = .closed(reason)
        keepalive?.cancel()
        reconnecting?.cancel()
        failPending(error)
        for (_, w) in reopenWaiters { w.resume(throwing: JanusError.disconnected) }
        reopenWaiters.removeAll()
        for (_, c) in handles { c.finish() }
        handles.removeAll()
        transport.close()
    }
}
