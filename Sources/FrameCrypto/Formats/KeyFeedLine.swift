import Foundation

/// One line of a key feed (`--key-feed`, serve's `POST …/keys`), as a host app hands keys to
/// PQSRTC's `frameKey(participantId:index:key:)` while the call runs:
/// `{"participant": "alice", "index": 1, "key": "<hex>"}` sets a key, without `participant` a
/// shared one; `{"participant": "alice", "index": 1, "ratchet": true}` ratchets it.
public enum KeyFeedLine: Sendable, Equatable {
    case set(participant: String?, index: UInt64, material: KeyMaterial)
    case ratchet(participant: String?, index: UInt64)

    /// The longest line read: a key feed line is small; anything longer is refused unread.
    public static let maxBytes = 4096

    public static func parse(_ line: some StringProtocol) throws(KeyFeedError) -> KeyFeedLine {
        guard line.utf8.count <= maxBytes else { throw .tooLong }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { throw .notAnObject }
        let known: Set<String> = ["participant", "index", "key", "ratchet"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) { throw .unknownField(unknown) }
        // Typed values through JSONDecoder: JSONSerialization gives NSNumber for numbers and
        // booleans alike (on Linux 0 and 1 read as Bool too), so `true` could pass as index 1.
        func field<T: Decodable>(_ name: String, _ type: T.Type, _ error: KeyFeedError) throws(KeyFeedError) -> T? {
            guard let value = object[name] else { return nil }
            guard let data = try? JSONSerialization.data(withJSONObject: [value], options: [.fragmentsAllowed]),
                  let decoded = try? JSONDecoder().decode([T].self, from: data).first else { throw error }
            return decoded
        }
        let participant = try field("participant", String.self, .badParticipant)
        if let participant, participant.isEmpty || participant.utf8.count > 256 { throw .badParticipant }
        guard let index = try field("index", UInt64.self, .badIndex) else { throw .badIndex }
        let hex = try field("key", String.self, .badKey)
        let ratchet = try field("ratchet", Bool.self, .neitherKeyNorRatchet)
        switch (hex, ratchet) {
        case (let hex?, nil):
            do { return .set(participant: participant, index: index, material: try KeyMaterial(hex: hex)) } catch { throw .badKey }
        case (nil, true?):
            return .ratchet(participant: participant, index: index)
        default:
            throw .neitherKeyNorRatchet
        }
    }
}

/// Why a key feed line was refused. Never holds the key.
public enum KeyFeedError: Error, Equatable, CustomStringConvertible {
    case tooLong, notAnObject, unknownField(String), badParticipant, badIndex, badKey, neitherKeyNorRatchet

    public var description: String {
        let form = #"{"participant": "<id>", "index": <n>, "key": "<hex>"} or {"participant": "<id>", "index": <n>, "ratchet": true}"#
        return switch self {
        case .tooLong: "a key feed line is at most \(KeyFeedLine.maxBytes) bytes"
        case .notAnObject: "a key feed line is one JSON object: \(form)"
        case .unknownField(let f): "unknown field \"\(f)\" in a key feed line: \(form)"
        case .badParticipant: "\"participant\" is a non-empty string of at most 256 bytes"
        case .badIndex: "\"index\" is a whole number ≥ 0"
        case .badKey: "\"key\" is key material as an even number of hex characters (1 to \(KeyMaterial.maxCount) bytes)"
        case .neitherKeyNorRatchet: "give either \"key\" or \"ratchet\": true: \(form)"
        }
    }
}
