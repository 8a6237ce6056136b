import Foundation
import Logging
import TextWebSocket

/// `--ws-listen`: the relay is the WebSocket server, for consumers that cannot accept
/// connections. A consumer connects to the destination's path with a participant id in place
/// of `{participant}` and gets that participant's stream (the same messages); one that connects
/// before the participant is there waits for them. The path up to `{participant}` is the index:
/// a `speaker` message for each participant with a stream (now and as they come) and `left`.
extension SpeakerRoom {
    /// Consumers waiting per participant, and in all, at most: a client cannot make the relay
    /// hold sockets without bound.
    static let maxPendingPerParticipant = 4
    static let maxPending = 64

    func startListening() async throws(BotError) {
        guard let (host, port) = destination.listenAddress else {
            throw .output("--ws-listen: \(destination) is not an address to listen on (ws://host:port/path/{participant}; no wss://)")
        }
        var limits = TextWebSocket.Limits()
        limits.maxQueuedMessages = SpeakerChannel.queueBound
        let destination = self.destination
        let listener: WebSocketListener
        do {
            listener = try await WebSocketListener.listen(host: host, port: port, limits: limits) { path in
                path == destination.indexPath || destination.participant(inPath: path) != nil
            }
        } catch {
            throw .output("--ws-listen: cannot listen on \(host):\(port): \(error)")
        }
        self.listener = listener
        log.info("listening for speaker-stream consumers on ws://\(host):\(listener.port)\(destination.indexPath) (index) and …/{participant}")
        Task { [weak self] in
            for await accepted in listener.accepted { await self?.accept(accepted) }
        }
    }

    private func accept(_ accepted: WebSocketListener.Accepted) {
        if accepted.path == destination.indexPath {
            indexes.append(accepted.socket)
            for (id, s) in speakers.sorted(by: { $0.key < $1.key }) {
                send(.speaker(participant: id, display: s.channel.who.display, path: path(of: id)), to: accepted.socket)
            }
            return
        }
        guard let id = destination.participant(inPath: accepted.path) else { return accepted.socket.close() }
        if let s = speakers[id] { return s.channel.attach(accepted.socket) }
        let waiting = pending.values.reduce(0) { $0 + $1.count }
        guard waiting < Self.maxPending, pending[id, default: []].count < Self.maxPendingPerParticipant else {
            log.warning("speaker-stream consumer for \(id) refused: \(waiting) consumers already wait for participants not here")
            return accepted.socket.close()
        }
        pending[id, default: []].append(accepted.socket)
    }

    /// A participant's stream exists: consumers waiting for them are attached, the index told.
    func arrived(_ id: String, display: String, channel: SpeakerChannel) {
        for socket in pending.removeValue(forKey: id) ?? [] { channel.attach(socket) }
        announce(.speaker(participant: id, display: display, path: path(of: id)))
    }

    func announce(_ message: SpeakerStreamMessage) {
        indexes.removeAll { !$0.enqueue(.text(message.json)) }
    }

    private func send(_ message: SpeakerStreamMessage, to socket: TextWebSocket) { _ = socket.enqueue(.text(message.json)) }

    private func path(of id: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        return destination.indexPath + "/" + (id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id)
    }

    func stopListening() async {
        await listener?.close()
        listener = nil
        for socket in indexes + pending.values.flatMap({ $0 }) { socket.close() }
        (indexes, pending) = ([], [:])
    }
}
