public import Bot
public import FrameCrypto
import Foundation
import Janus

/// What a client asks for: a recording, a playback or a relay, checked field by field so a bad request
/// is answered with the field it got wrong. Persisted as given (with the key) in the state
/// folder, so a restarted service can take the job up again.
public struct JobSpec: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable { case recording, playback, relay }

    /// The call key: 64 hex characters, a key file on the service's machine, or explicitly none.
    /// With a format whose frames name their key (`format.frame` framecryptor or sframe): key
    /// material of any length, shared by every participant at index 0 (SFrame: at the KID), or
    /// `none` when the request gave no key (keys come by `keys` or `POST …/keys`).
    public enum Key: Codable, Sendable, Equatable {
        case hex(String)
        case file(String)
        case none

        private enum CodingKeys: String, CodingKey { case hex, file, none }

        /// As the API takes it: `{"hex": "…"}`, `{"file": "…"}` or `{"none": true}`.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            if let hex = try c.decodeIfPresent(String.self, forKey: .hex) { self = .hex(hex) }
            else if let file = try c.decodeIfPresent(String.self, forKey: .file) { self = .file(file) }
            else if try c.decodeIfPresent(Bool.self, forKey: .none) == true { self = .none }
            else { throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: "a key is {hex}, {file} or {none: true}")) }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .hex(let hex): try c.encode(hex, forKey: .hex)
            case .file(let file): try c.encode(file, forKey: .file)
            case .none: try c.encode(true, forKey: .none)
            }
        }
    }

    public var kind: Kind
    public var room: Int64
    /// nil: the service's `--janus`.
    public var janus: String?
    public var key: Key
    /// Recording: the folder for the files and manifest.json, below `--output-root` (canonical,
    /// absolute, once the service took the job).
    public var out: String?
    /// Recording: every publisher's audio mixed into this file (below `--output-root`; a new file).
    public var mix: String?
    /// Playback: the file to play (a regular file below `--media-root`).
    public var file: String?
    /// Playback: the display name (`"<userId>:<Name>"`).
    public var display: String?
    public var loop: Bool
    public var durationSeconds: Double?
    /// The frame format and its options; nil: ECall's.
    public var format: FrameFormatSettings? = nil
    /// Each participant's own key material by index (framecryptor, sframe), as `--key-map`.
    public var keys: [ParticipantKey]? = nil
    /// Relay: the destination (`rtmp://`, `rtmps://`, `srt://`, `rtp://`), allowed by `--relay-allow`.
    public var to: String? = nil
    /// Relay: the participant relayed (a feed id, or the user id of an ECall display).
    public var participant: String? = nil
    /// Relay in: the live source published into the room (`rtmp://`, `srt://`, `rtp://`),
    /// allowed by `--relay-allow`; then `to` and `participant` are nil.
    public var from: String? = nil
    /// Relay out without `participant` (to rtmp/srt): the whole room composed, `grid` or `speaker`
    /// (nil: grid), at `size` (`WxH`; nil: 1280x720).
    public var layout: String? = nil
    public var size: String? = nil
    /// Relay into another room (`sfubot relay --to-room`): `participant` (nil: everyone publishing
    /// audio) published there, each frame sealed again with that room's key and format.
    public var toRoom: ToRoom? = nil

    /// The other room of a bridge: its id, Janus (nil: the job's), key and frame format.
    public struct ToRoom: Codable, Sendable, Equatable {
        public var room: Int64
        public var janus: String?
        public var key: Key
        public var format: FrameFormatSettings?
    }

    /// One participant's key at one index, as a request gives it: `{"participant", "index", "key"}`.
    public struct ParticipantKey: Codable, Sendable, Equatable {
        public var participant: String
        public var index: UInt64
        /// Key material as hex.
        public var key: String
    }

    /// The frame format this job's frames are in.
    public var frameFormat: FrameFormatName { format?.frame ?? .ecall }
}

/// A request the service refuses, with the HTTP status and a message naming what is wrong.
public struct RequestProblem: Error, Sendable, Equatable {
    public let status: Int
    public let message: String

    static func field(_ name: String, _ what: String) -> RequestProblem { .init(status: 400, message: "\(name): \(what)") }
}

extension JobSpec {
    /// The longest job: 365 days, as the CLI's options.
    static let maxSeconds: Double = 365 * 24 * 3600
    /// The longest string field (`janus`, `out`, `mix`, `file`, `key.file`), in bytes.
    public static let maxFieldBytes = 1024

    /// Parses a request body (JSON object) for `kind`.
    static func parse(_ body: Data, kind: Kind) throws(RequestProblem) -> JobSpec {
        let parsed: JSON
        do { parsed = try JSONDecoder().decode(JSON.self, from: body) } catch {
            throw RequestProblem(status: 400, message: "the body is not valid JSON")
        }
        guard case .object(let object) = parsed else { throw RequestProblem(status: 400, message: "the body must be a JSON object") }
        let fields = Fields(object)
        let allowed: Set<String> = switch kind {
        case .recording: ["room", "janus", "key", "out", "mix", "durationSeconds", "display", "format", "keys"]
        case .playback: ["room", "janus", "key", "file", "display", "loop", "durationSeconds", "format", "keys"]
        case .relay: ["room", "janus", "key", "to", "from", "toRoom", "participant", "layout", "size", "display", "durationSeconds", "format", "keys"]
        }
        if let unknown = object.keys.filter({ !allowed.contains($0) }).sorted().first {
            throw .field(unknown, "unknown field; \(kind.rawValue)s take \(allowed.sorted().joined(separator: ", "))")
        }
        let (format, choice) = try fields.format()
        var spec = JobSpec(
            kind: kind, room: try fields.room(), janus: try fields.janusURL(), key: try fields.key(format: choice.name),
            loop: try fields.bool("loop") ?? false, durationSeconds: try fields.seconds("durationSeconds"))
        spec.format = format
        spec.keys = try fields.participantKeys(choice)
        spec.display = try fields.string("display")
        if let display = spec.display, display.isEmpty || display.utf8.count > 256 {
            throw .field("display", "give 1 to 256 bytes (ECall's \"<userId>:<Name>\")")
        }
        switch kind {
        case .recording:
            spec.out = try fields.path("out", required: true)
            spec.mix = try fields.path("mix", required: false)
        case .playback:
            spec.file = try fields.path("file", required: true)
        case .relay:
            if let from = try fields.relaySource() {
                spec.from = from
            } else if let toRoom = try fields.toRoom(encrypted: spec.key != .none || spec.frameFormat.namesItsKey) {
                (spec.toRoom, spec.participant) = (toRoom, try fields.participant())
            } else {
                (spec.to, spec.participant) = try fields.relay()
                (spec.layout, spec.size) = try fields.composite(participant: spec.participant)
            }
        }
        return spec
    }
}

/// Typed reads of a JSON object's fields, each failure naming its field.
struct Fields {
    let object: [String: JSON]
    init(_ object: [String: JSON]) { self.object = object }

    func room() throws(RequestProblem) -> Int64 {
        guard let value = object["room"] else { throw .field("room", "required: the VideoRoom room id") }
        guard case .int(let n) = value, n >= 1 else { throw .field("room", "must be a positive integer") }
        return n
    }

    func string(_ name: String) throws(RequestProblem) -> String? {
        guard let value = object[name], value != .null else { return nil }
        guard case .string(let s) = value else { throw .field(name, "must be a string") }
        return s
    }

    func bool(_ name: String) throws(RequestProblem) -> Bool? {
        guard let value = object[name], value != .null else { return nil }
        guard case .bool(let b) = value else { throw .field(name, "must be true or false") }
        return b
    }

    func seconds(_ name: String) throws(RequestProblem) -> Double? {
        guard let value = object[name], value != .null else { return nil }
        let n: Double
        switch value {
        case .int(let i): n = Double(i)
        case .double(let d): n = d
        default: throw .field(name, "must be a number of seconds")
        }
        guard n.isFinite, n > 0, n <= JobSpec.maxSeconds else {
            throw .field(name, "must be above 0 and at most \(Int(JobSpec.maxSeconds)) seconds (365 days), got \(n)")
        }
        return n
    }

    /// A path below the field's root (`--output-root` or `--media-root`): relative to it, or
    /// absolute and inside it (Roots.swift checks that, and walks it).
    func path(_ name: String, required: Bool) throws(RequestProblem) -> String? {
        guard let s = try string(name) else {
            if required { throw .field(name, "required: a path below the service's root folder") }
            return nil
        }
        guard !s.isEmpty, s.utf8.count <= JobSpec.maxFieldBytes, !s.utf8.contains(0) else {
            throw .field(name, "must be a path of 1 to \(JobSpec.maxFieldBytes) bytes")
        }
        return s
    }

    func janusURL() throws(RequestProblem) -> String? {
        guard let s = try string("janus") else { return nil }
        guard JanusAllowList.normal(s) != nil else {
            throw .field("janus", "must be a ws:// or wss:// URL of at most \(JobSpec.maxFieldBytes) bytes with a host name, IPv4 address or IPv6 literal in brackets (no user:password@) and a port of 1 to 65535")
        }
        return s
    }

    func key(format: FrameFormatName) throws(RequestProblem) -> JobSpec.Key {
        let forms = "{\"hex\": \"…\"}, {\"file\": \"/path\"} or {\"none\": true}"
        guard let value = object["key"] else {
            // Keys by index may all come later (`keys`, `POST …/keys`).
            if format.namesItsKey { return .none }
            throw .field("key", "required: \(forms)")
        }
        guard case .object(let k) = value, k.count == 1, let (name, inner) = k.first else { throw .field("key", "must be one of \(forms)") }
        switch (name, inner) {
        case ("hex", .string(let hex)) where format.namesItsKey:
            guard (try? KeyMaterial(hex: hex)) != nil else {
                throw .field("key.hex", "key material is an even number of hex characters (1 to \(KeyMaterial.maxCount) bytes); got \(hex.utf8.count) characters")
            }
            return .hex(hex)
        case ("hex", .string(let hex)):
            guard hex.utf8.count == 64, hex.utf8.allSatisfy({ $0 < 0x80 && Character(UnicodeScalar($0)).isHexDigit }) else {
                throw .field("key.hex", "a call key is 64 hex characters (32 bytes); got \(hex.utf8.count) characters\(hex.utf8.count == 64 ? " that are not all hex" : "")")
            }
            return .hex(hex)
        case ("hex", _): throw .field("key.hex", format.namesItsKey ? "must be a string of hex characters" : "must be a string of 64 hex characters")
        case ("file", .string(let path)) where !path.isEmpty && path.utf8.count <= JobSpec.maxFieldBytes && !path.utf8.contains(0): return .file(path)
        case ("file", _): throw .field("key.file", "must be a path below --media-root to a key file (32 raw bytes or 64 hex characters)")
        case ("none", .bool(true)) where format.namesItsKey:
            throw .field("key.none", "\(format.rawValue) frames are always encrypted: leave key out to hand every key in by keys or POST …/keys")
        case ("none", .bool(true)): return .none
        case ("none", _): throw .field("key.none", "must be true (media without ECall's frame encryption)")
        default: throw .field("key", "must be one of \(forms)")
        }
    }
}
