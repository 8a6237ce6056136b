import Bot
import FrameCrypto
import Janus

/// A job's `format` and `keys`: the CLI's `--frame-format …` options and `--key-map`, checked
/// by the same `FrameFormatSettings` the CLI uses, each refusal naming `format.<field>` or `keys[i]`.
extension Fields {
    /// The most per-participant keys a request gives: each is derived before the job starts
    /// (FrameCryptor: a PBKDF2 of 100 000 rounds, tens of milliseconds).
    static let maxKeys = 256

    /// The format as given (nil: none given, ECall's) and as checked.
    func format() throws(RequestProblem) -> (FrameFormatSettings?, FrameFormatChoice) {
        guard let value = object["format"], value != .null else {
            return (nil, try Self.check(FrameFormatSettings()))
        }
        guard case .object(let o) = value else { throw .field("format", "must be an object: {\"frame\": \"ecall|framecryptor|sframe\", …}") }
        let names = FrameFormatSettings.Field.allCases.map(\.rawValue)
        if let unknown = o.keys.filter({ !names.contains($0) }).sorted().first {
            throw .field("format.\(unknown)", "unknown field; a format takes \(names.joined(separator: ", "))")
        }
        let f = Fields(o)
        var settings = FrameFormatSettings()
        if let frame = try f.text("frame") {
            guard let name = FrameFormatName(rawValue: frame) else {
                throw .field("format.frame", "takes \(FrameFormatName.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            settings.frame = name
        }
        settings.ratchetSalt = try f.text("ratchetSalt")
        settings.magicBytes = try f.text("magicBytes")
        settings.sframeSuite = try f.text("sframeSuite") ?? settings.sframeSuite
        settings.ratchetWindow = Int(try f.whole("ratchetWindow") ?? Int64(settings.ratchetWindow))
        settings.keyRingSize = Int(try f.whole("keyRingSize") ?? Int64(settings.keyRingSize))
        settings.sframeKid = UInt64(try f.whole("sframeKid") ?? 0)
        settings.keyIndex = UInt64(try f.whole("keyIndex") ?? 0)
        if let rule = try f.text("participantId") {
            guard let r = ParticipantIDRule(rawValue: rule) else {
                throw .field("format.participantId", "takes \(ParticipantIDRule.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            settings.participantId = r
        }
        if let wait = o["keyWaitSeconds"], wait != .null {
            switch wait {
            case .int(let n): settings.keyWaitSeconds = Double(n)
            case .double(let d): settings.keyWaitSeconds = d
            default: throw .field("format.keyWaitSeconds", "must be a number of seconds")
            }
        }
        return (settings, try Self.check(settings))
    }

    private static func check(_ settings: FrameFormatSettings) throws(RequestProblem) -> FrameFormatChoice {
        do { return try settings.checked(naming: { "format.\($0.rawValue)" }) } catch {
            throw RequestProblem(status: 400, message: error.message)
        }
    }

    /// A string of `format`, or nil when absent or null.
    private func text(_ name: String) throws(RequestProblem) -> String? {
        guard let value = object[name], value != .null else { return nil }
        guard case .string(let s) = value else { throw .field("format.\(name)", "must be a string") }
        return s
    }

    /// A whole number ≥ 0, or nil when absent or null.
    private func whole(_ name: String) throws(RequestProblem) -> Int64? {
        guard let value = object[name], value != .null else { return nil }
        guard case .int(let n) = value, n >= 0 else { throw .field("format.\(name)", "must be a whole number ≥ 0") }
        return n
    }

    /// `keys`: each participant's own key material by index, as `--key-map` gives it.
    func participantKeys(_ choice: FrameFormatChoice) throws(RequestProblem) -> [JobSpec.ParticipantKey]? {
        guard let value = object["keys"], value != .null else { return nil }
        guard choice.name.namesItsKey else {
            throw .field("keys", "per-participant keys by index are for format.frame framecryptor or sframe; ECall's call key is key")
        }
        guard case .array(let items) = value, items.count <= Self.maxKeys else {
            throw .field("keys", "must be an array of at most \(Self.maxKeys) {\"participant\", \"index\", \"key\"}")
        }
        var out: [JobSpec.ParticipantKey] = []
        var seen = Set<String>()
        for (i, item) in items.enumerated() {
            let at = "keys[\(i)]"
            guard case .object(let o) = item else { throw .field(at, "must be an object {\"participant\", \"index\", \"key\"}") }
            if let unknown = o.keys.filter({ !["participant", "index", "key"].contains($0) }).sorted().first {
                throw .field("\(at).\(unknown)", "unknown field; a key takes participant, index, key")
            }
            guard case .string(let participant)? = o["participant"], !participant.isEmpty, participant.utf8.count <= 256 else {
                throw .field("\(at).participant", "required: the participant's id (its display's \"<id>:\"), 1 to 256 bytes")
            }
            guard case .int(let n)? = o["index"], n >= 0 else { throw .field("\(at).index", "required: a whole number ≥ 0") }
            let index = UInt64(n)
            if let options = choice.frameCryptor, index >= UInt64(options.keyRingSize) {
                throw .field("\(at).index", "takes 0 to \(options.keyRingSize - 1) (format.keyRingSize \(options.keyRingSize))")
            }
            guard case .string(let hex)? = o["key"], (try? KeyMaterial(hex: hex)) != nil else {
                throw .field("\(at).key", "required: key material as an even number of hex characters (1 to \(KeyMaterial.maxCount) bytes)")
            }
            guard seen.insert("\(index) \(participant)").inserted else {
                throw .field("\(at)", "a second key for participant \(participant) at index \(index)")
            }
            out.append(.init(participant: participant, index: index, key: hex))
        }
        return out
    }
}
