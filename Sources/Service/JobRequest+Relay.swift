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
}
