import Foundation

/// `--chaos ws-drop=2,ice-restart=1,key-rotation=1`: faults injected during the steady window,
/// each kind at a rate per minute: per bot for `ws-drop` and `ice-restart` (2 means each bot
/// loses its WebSocket about twice a minute), for the whole run for `key-rotation`. Faults of a
/// kind are spaced 0.5–1.5 × their mean interval at random, so a short run still sees about
/// rate × minutes of them.
public struct ChaosPlan: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable, CaseIterable, Comparable {
        /// The bot's WebSocket to Janus closes; the session is claimed back or the bot rejoins.
        case wsDrop = "ws-drop"
        /// The bot's PeerConnection is replaced on the same session (what lost media does).
        case iceRestart = "ice-restart"
        /// A new call key: future key on every ring at once, current ~3 s later (ECALL-WIRE §4).
        case keyRotation = "key-rotation"

        /// Whether the rate counts per bot (else for the whole run).
        public var perBot: Bool { self != .keyRotation }
        public static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }

    /// Faults per minute by kind (per bot, or per run for key-rotation).
    public var perMinute: [String: Double]

    public init(perMinute: [Kind: Double]) {
        self.perMinute = Dictionary(uniqueKeysWithValues: perMinute.map { ($0.key.rawValue, $0.value) })
    }

    public func rate(_ kind: Kind) -> Double { perMinute[kind.rawValue] ?? 0 }
    public var kinds: [Kind] { Kind.allCases.filter { rate($0) > 0 } }

    /// Parses `kind=rate[,kind=rate…]`; rates are per minute, ≥ 0, at most 600.
    public init(parsing text: String) throws(ParseError) {
        var rates: [Kind: Double] = [:]
        for part in text.split(separator: ",", omittingEmptySubsequences: true) {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { throw ParseError("\"\(part)\" is not kind=rate") }
            guard let kind = Kind(rawValue: pair[0]) else {
                throw ParseError("unknown fault \"\(pair[0])\" (known: \(Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            guard let rate = Double(pair[1]), rate.isFinite, rate >= 0, rate <= 600 else {
                throw ParseError("\(kind.rawValue) takes a rate per minute from 0 to 600, got \"\(pair[1])\"")
            }
            guard rates[kind] == nil else { throw ParseError("\(kind.rawValue) given twice") }
            rates[kind] = rate
        }
        guard !rates.isEmpty else { throw ParseError("give at least one kind=rate, e.g. ws-drop=2") }
        self.init(perMinute: rates)
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }
}

/// One injected fault and how the room came back from it (`raw.json`).
public struct FaultRecord: Codable, Sendable, Equatable {
    public var kind: String
    /// The bot it hit ("p3", "s0"), or "all" for a key rotation.
    public var bot: String
    /// Seconds after the shard's start.
    public var at: Double
    /// Seconds from the fault to the first good decrypted frame on the affected bot(s): the
    /// subscriber itself; for a publisher, the slowest subscriber that was receiving it; for a
    /// key rotation, the slowest subscriber after the switch. Nil: not recovered.
    public var seconds: Double?
    /// How it came back ("claimed", "rejoined", "new PeerConnection", "switched"), or why not.
    public var note: String
}
