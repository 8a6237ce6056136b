import Crypto
public import Foundation

/// Per-sender keys (`--key-map FILE`): each sender seals with its own key, as PQSRTC's
/// `frameKey(participantId, index, key)` injects it; the frame layout stays ECall's.
///
/// File format: `{"<participantId>": {"<index>": "<64 hex characters>", ...}, ...}`.
public struct KeyMap: Sendable {
    /// One sender's keys, newest (highest index) first: the order a receiver tries them in.
    public struct SenderKeys: Sendable {
        public let participant: String
        public let keys: [(index: Int, key: CallKey)]
        /// The key this sender seals with: its newest.
        public var newest: CallKey? { keys.first?.key }
        /// No keys: every frame of this sender is dropped (the receiver does not hold its key).
        public static func none(_ participant: String) -> SenderKeys { SenderKeys(participant: participant, keys: []) }
    }

    public let senders: [String: SenderKeys]

    public init(senders: [String: [Int: CallKey]]) {
        self.senders = Dictionary(uniqueKeysWithValues: senders.map { id, keys in
            (id, SenderKeys(participant: id, keys: keys.sorted { $0.key > $1.key }.map { ($0.key, $0.value) }))
        })
    }

    /// Parses the JSON form; `source` names it in errors.
    public init(json: Data, source: String = "key map") throws(KeyMapError) {
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else {
            throw KeyMapError(.notAnObject(source))
        }
        var senders = [String: [Int: CallKey]]()
        for (id, value) in object {
            guard !id.isEmpty, let indexes = value as? [String: Any], !indexes.isEmpty else { throw KeyMapError(.badSender(source, id)) }
            var keys = [Int: CallKey]()
            for (indexText, hex) in indexes {
                guard let index = Int(indexText), index >= 0 else { throw KeyMapError(.badIndex(source, id, indexText)) }
                guard let hex = hex as? String, let key = try? CallKey(hex: hex) else { throw KeyMapError(.badKey(source, id, indexText)) }
                keys[index] = key
            }
            senders[id] = keys
        }
        self.init(senders: senders)
    }

    /// Reads a key map file.
    public init(contentsOfFile path: String) throws(KeyMapError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw KeyMapError(.unreadable(path)) }
        try self.init(json: data, source: path)
    }

    /// The JSON form (for tests and `load --per-sender-keys`): it holds keys in the clear.
    public var json: Data {
        let object = senders.mapValues { s in Dictionary(uniqueKeysWithValues: s.keys.map { (String($0.index), $0.key.exportedHex) }) }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    /// The keys of the publisher with this Janus display (`<participantId>:<name>`, as ECall sets
    /// it) or, if its display names no sender of the map, this feed id. No keys if neither does.
    public func keys(display: String, feedID: Int64?) -> SenderKeys {
        let id = Self.participantID(display: display)
        if let id, let s = senders[id] { return s }
        if let feedID, let s = senders[String(feedID)] { return s }
        return .none(id ?? feedID.map(String.init) ?? "")
    }

    /// The participant id of a Janus display `<id>:<name>`: what comes before the first colon.
    public static func participantID(display: String) -> String? {
        guard let colon = display.firstIndex(of: ":") else { return display.isEmpty ? nil : display }
        let id = display[..<colon]
        return id.isEmpty ? nil : String(id)
    }
}

/// How a publisher's participant id (whose keys open its frames) is read from what Janus tells
/// a subscriber: PQSRTC's and ECall's display `<id>:<name>` (the default), the whole display
/// (clients whose display is their identity, as LiveKit-style apps often set it), or the feed id.
public enum ParticipantIDRule: String, CaseIterable, Sendable, Codable {
    case displayPrefix = "display-prefix"
    case display
    case feed

    /// The id under this rule; "" when Janus gave nothing it could be read from.
    public func id(display: String, feedID: Int64?) -> String {
        switch self {
        case .displayPrefix: KeyMap.participantID(display: display) ?? feedID.map(String.init) ?? ""
        case .display: display.isEmpty ? feedID.map(String.init) ?? "" : display
        case .feed: feedID.map(String.init) ?? ""
        }
    }
}

extension KeyMap {
    /// `load --per-sender-keys`: one key per sender, derived from the run's call key
    /// (HKDF-SHA256, info "sfubot per-sender key <id>"), so every shard of a run, each its own
    /// process, derives the same map. Index 0 each.
    public static func derived(from callKey: CallKey, senders ids: [String]) -> KeyMap {
        KeyMap(senders: Dictionary(uniqueKeysWithValues: ids.map { id in
            let bytes = HKDF<SHA256>.deriveKey(inputKeyMaterial: callKey.symmetricKey, info: Data("sfubot per-sender key \(id)".utf8), outputByteCount: 32)
            return (id, [0: bytes.withUnsafeBytes { try! CallKey(bytes: $0) }])  // 32 bytes: cannot fail
        }))
    }

    /// The same map with cipher pools of its own (see `CallKey.withOwnCiphers`).
    public func withOwnCiphers() -> KeyMap {
        KeyMap(senders: senders.mapValues { s in Dictionary(uniqueKeysWithValues: s.keys.map { ($0.index, $0.key.withOwnCiphers()) }) })
    }
}

/// Why a key map could not be read. The message says what to fix.
public struct KeyMapError: Error, CustomStringConvertible, Equatable {
    enum Reason: Equatable {
        case unreadable(String)
        case notAnObject(String)
        case badSender(String, String)
        case badIndex(String, String, String)
        case badKey(String, String, String)
        case badMaterial(String, String, String)
    }
    let reason: Reason
    init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        let form = #"{"<participantId>": {"<index>": "<64 hex characters>", ...}, ...}"#
        return switch reason {
        case .unreadable(let p): "cannot read key map \(p): check the path and its permissions"
        case .notAnObject(let p): "key map \(p) is not a JSON object of the form \(form)"
        case .badSender(let p, let id): "key map \(p): participant \"\(id)\" needs an object of at least one index → key"
        case .badIndex(let p, let id, let i): "key map \(p): participant \"\(id)\": index \"\(i)\" is not a whole number ≥ 0"
        case .badKey(let p, let id, let i): "key map \(p): participant \"\(id)\" index \(i): a key is 64 hex characters (32 bytes)"
        case .badMaterial(let p, let id, let i): "key map \(p): participant \"\(id)\" index \(i): key material is an even number of hex characters (1 to \(KeyMaterial.maxCount) bytes)"
        }
    }
}
