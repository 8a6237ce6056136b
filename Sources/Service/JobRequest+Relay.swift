import Bot
import Foundation
import Janus

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
        let participant = try self.participant()
        // Without a participant: the whole room, composed (rtmp, srt); rtp carries one as sent.
        if case .destination(let d) = target, participant == nil, d.kind != .rtmp, d.kind != .srt {
            throw .field("participant", "required with \(d.kind.rawValue)://: the participant to relay, a feed id or the user id of an ECall display (1 to 64 bytes); the whole room, composed, goes to rtmp:// or srt://")
        }
        return (to, participant)
    }

    /// `layout` (grid, speaker) and `size` (`WxH`): only for the whole room, composed (no participant).
    func composite(participant: String?) throws(RequestProblem) -> (layout: String?, size: String?) {
        let (layout, size) = (try string("layout"), try string("size"))
        if participant != nil, layout != nil || size != nil {
            throw .field(layout != nil ? "layout" : "size", "composes the whole room: give it without participant")
        }
        if let layout, CompositeLayout(rawValue: layout) == nil { throw .field("layout", "grid or speaker") }
        if let size {
            do { _ = try CompositeFormat(size: size) } catch { throw .field("size", "\(error)".replacingOccurrences(of: "--size ", with: "")) }
        }
        return (layout, size)
    }

    /// `participant`, optional: a feed id or the user id of an ECall display.
    func participant() throws(RequestProblem) -> String? {
        let participant = try string("participant")
        if let participant, participant.isEmpty || participant.utf8.count > 64 {
            throw .field("participant", "the participant to relay, a feed id or the user id of an ECall display (1 to 64 bytes)")
        }
        return participant
    }

    /// `toRoom`: `{"room", "key", "format", "janus"}`, the other room of a bridge, or nil. Its
    /// key is hex (or none when the job's room is not encrypted either: an encrypted call, by
    /// its key or by keys per participant, is never bridged into a room without encryption).
    func toRoom(encrypted: Bool) throws(RequestProblem) -> JobSpec.ToRoom? {
        guard let value = object["toRoom"], value != .null else { return nil }
        guard case .object(let o) = value else { throw .field("toRoom", "must be an object {\"room\", \"key\", \"format\", \"janus\"}") }
        if let unknown = o.keys.filter({ !["room", "key", "format", "janus"].contains($0) }).sorted().first {
            throw .field("toRoom.\(unknown)", "unknown field; toRoom takes room, key, format, janus")
        }
        if try string("to") != nil { throw .field("to", "a relay takes to (out of the room) or toRoom (into another room), not both") }
        let inner = Fields(o)
        let toRoom: JobSpec.ToRoom
        do throws(RequestProblem) {
            let (format, choice) = try inner.format()
            toRoom = .init(room: try inner.room(), janus: try inner.janusURL(), key: try inner.key(format: choice.name), format: format)
        } catch { throw RequestProblem(status: error.status, message: "toRoom.\(error.message)") }
        switch toRoom.key {
        case .file: throw .field("toRoom.key", "give the other room's key as {\"hex\": \"…\"}")
        case .none where encrypted:
            throw .field("toRoom.key", "required: the call is encrypted, and is never bridged into a room without a key")
        default: return toRoom
        }
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
