import Bot
import Foundation

/// A relay request's own fields: where to (`to`) and whom (`participant`; for speaker streams
/// optional: everyone publishing audio).
extension Fields {
    func relay() throws(RequestProblem) -> (to: String, participant: String?) {
        guard let to = try string("to"), !to.isEmpty else {
            throw .field("to", "required: the destination, rtmp://host[:port]/app/stream, srt://host:port, rtp://host:port or ws://host:port/path/{participant}")
        }
        guard to.utf8.count <= JobSpec.maxFieldBytes, !to.utf8.contains(0) else { throw .field("to", "must be a URL of at most \(JobSpec.maxFieldBytes) bytes") }
        let target: RelayTarget
        do { target = try RelayTarget(to) } catch { throw .field("to", error.description.replacingOccurrences(of: "--to ", with: "")) }
        let participant = try string("participant")
        if let participant, participant.isEmpty || participant.utf8.count > 64 {
            throw .field("participant", "the participant to relay, a feed id or the user id of an ECall display (1 to 64 bytes)")
        }
        if case .destination = target, participant == nil {
            throw .field("participant", "required: the participant to relay, a feed id or the user id of an ECall display (1 to 64 bytes)")
        }
        return (to, participant)
    }

    /// `from`: a live source into the room (`sfubot relay --from`), or nil for a relay out.
    func relaySource() throws(RequestProblem) -> String? {
        guard let from = try string("from") else { return nil }
        guard !from.isEmpty, from.utf8.count <= JobSpec.maxFieldBytes, !from.utf8.contains(0) else {
            throw .field("from", "must be a URL of at most \(JobSpec.maxFieldBytes) bytes")
        }
        do { _ = try LiveSourceAddress(from) } catch { throw .field("from", error.description) }
        for other in ["to", "participant"] where try string(other) != nil {
            throw .field(other, "a relay takes from (a live source into the room) or to (the room out), not both; from publishes a participant of its own")
        }
        return from
    }
}
