public import FrameCrypto
import Foundation

/// A call's frame format and the options each format takes, as given: the CLI's
/// `--frame-format …` options and a serve job's `format` object are both this, with the same
/// defaults (PQSRTC's), and both are checked by `checked(naming:)` into a `FrameFormatChoice`.
public struct FrameFormatSettings: Sendable, Equatable, Codable {
    public var frame: FrameFormatName = .ecall
    /// framecryptor: the PBKDF2 salt, as text or `hex:…`.
    public var ratchetSalt: String?
    /// framecryptor: the bytes that end a clear frame, as text or `hex:…`.
    public var magicBytes: String?
    public var ratchetWindow = 8
    public var keyRingSize = 16
    public var sframeSuite = "AES_128_GCM_SHA256_128"
    public var sframeKid: UInt64 = 0
    /// framecryptor: the key index a sender seals with.
    public var keyIndex: UInt64 = 0
    /// How long frames naming a key not handed in yet wait for it.
    public var keyWaitSeconds: Double = 2
    /// How a publisher's participant id is read (nil: `displayPrefix`, as PQSRTC and ECall set
    /// displays). Optional so that specs saved before it decode.
    public var participantId: ParticipantIDRule?

    public init() {}

    /// The settings' fields, each named the CLI's way (`option`) or the API's (`rawValue`).
    public enum Field: String, CaseIterable, Sendable {
        case frame, ratchetSalt, magicBytes, ratchetWindow, keyRingSize, sframeSuite, sframeKid, keyIndex, keyWaitSeconds, participantId

        public var option: String {
            switch self {
            case .frame: "--frame-format"
            case .keyWaitSeconds: "--key-wait"
            default: "--" + rawValue.reduce(into: "") { $0 += $1.isUppercase ? "-" + $1.lowercased() : String($1) }
            }
        }
    }

    /// The longest ratchet salt or magic bytes, in bytes once decoded.
    public static let maxBytes = 512
    /// The longest key wait, as every time option: 365 days.
    public static let maxSeconds: Double = 365 * 24 * 3600

    /// Checks every field against the format; `name` spells a field in the caller's language
    /// (`--ratchet-salt` or `format.ratchetSalt`) in the messages.
    public func checked(naming name: (Field) -> String) throws(FormatProblem) -> FrameFormatChoice {
        func fail(_ field: Field, _ what: String) -> FormatProblem { FormatProblem(field: field, message: "\(name(field)) \(what)") }
        guard (0...64).contains(ratchetWindow) else { throw fail(.ratchetWindow, "takes 0 to 64, got \(ratchetWindow)") }
        guard (1...256).contains(keyRingSize) else { throw fail(.keyRingSize, "takes 1 to 256, got \(keyRingSize)") }
        guard keyWaitSeconds.isFinite, keyWaitSeconds >= 0, keyWaitSeconds <= Self.maxSeconds else {
            throw fail(.keyWaitSeconds, "takes 0 to \(Int(Self.maxSeconds)) seconds (365 days), got \(keyWaitSeconds)")
        }
        func bytes(_ text: String?, _ field: Field) throws(FormatProblem) -> [UInt8]? {
            guard let text else { return nil }
            guard text.hasPrefix("hex:") else {
                guard text.utf8.count <= Self.maxBytes else { throw fail(field, "takes at most \(Self.maxBytes) bytes") }
                return Array(text.utf8)
            }
            guard let material = try? KeyMaterial(hex: String(text.dropFirst(4))) else {
                throw fail(field, "\(text.prefix(40)): after hex: give an even number of hex characters (1 to \(Self.maxBytes) bytes)")
            }
            return material.bytes
        }
        let salt = try bytes(ratchetSalt, .ratchetSalt)
        let magic = try bytes(magicBytes, .magicBytes)
        var choice = FrameFormatChoice(name: frame, keyWait: .seconds(keyWaitSeconds), participantIDs: participantId ?? .displayPrefix)
        switch frame {
        case .ecall:
            if let field = [(ratchetSalt, Field.ratchetSalt), (magicBytes, .magicBytes), (participantId?.rawValue, .participantId)]
                .first(where: { $0.0 != nil })?.1 {
                throw fail(field, "is for \(name(.frame)) framecryptor or sframe, not ecall")
            }
        case .framecryptor:
            guard let salt else {
                throw fail(.ratchetSalt, "is needed with \(name(.frame)) framecryptor: the salt the clients derive keys with (PQSRTC: the app's ratchet salt; LiveKit's default is LKFrameEncryptionKey)")
            }
            guard keyIndex < UInt64(keyRingSize) else {
                throw fail(.keyIndex, "takes 0 to \(keyRingSize - 1) (\(name(.keyRingSize)) \(keyRingSize)), got \(keyIndex)")
            }
            choice.frameCryptor = FrameCryptorOptions(ratchetSalt: salt, magicBytes: magic ?? [], ratchetWindow: ratchetWindow, keyRingSize: keyRingSize)
            choice.sharedIndex = 0
            choice.sealingIndex = keyIndex
        case .sframe:
            guard let suite = SFrameSuite(name: sframeSuite) else {
                throw fail(.sframeSuite, "\(sframeSuite.prefix(40)) is not one of \(SFrameSuite.allCases.map(\.name).joined(separator: ", "))")
            }
            choice.sframeSuite = suite
            choice.sharedIndex = sframeKid
            choice.sealingIndex = sframeKid
        }
        return choice
    }
}

/// A setting refused, with a message that names it as the caller spells it.
public struct FormatProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let field: FrameFormatSettings.Field
    public let message: String
    public var description: String { message }
}

/// Checked frame format settings: what a protection is built from.
public struct FrameFormatChoice: Sendable {
    public let name: FrameFormatName
    public let keyWait: Duration
    public let participantIDs: ParticipantIDRule
    /// framecryptor: its options; sframe: its suite.
    public fileprivate(set) var frameCryptor: FrameCryptorOptions?
    public fileprivate(set) var sframeSuite: SFrameSuite?
    /// The index (FrameCryptor) or KID (SFrame) a shared key (`--key-hex`, a job's `key`) sits at.
    public fileprivate(set) var sharedIndex: UInt64 = 0
    /// The index or KID a sender seals with.
    public fileprivate(set) var sealingIndex: UInt64 = 0

    fileprivate init(name: FrameFormatName, keyWait: Duration, participantIDs: ParticipantIDRule) {
        (self.name, self.keyWait, self.participantIDs) = (name, keyWait, participantIDs)
    }

    /// The protection of a call in this format, for a format whose frames name their key: its
    /// store filled with `shared` (at `sharedIndex`) and each participant's `own` keys, by index;
    /// this bot seals as `sender`. Derives every key (PBKDF2 for FrameCryptor) on the caller's
    /// thread: call it off Swift's pool.
    public func protection(shared: KeyMaterial?, own: [String: [UInt64: KeyMaterial]], sender: String) throws(KeyError) -> FrameProtection {
        if let frameCryptor {
            return try fill(FrameKeyStore(format: FrameCryptorFormat(options: frameCryptor)), shared: shared, own: own, sender: sender)
        }
        if let sframeSuite {
            return try fill(FrameKeyStore(format: SFrameFormat(suite: sframeSuite)), shared: shared, own: own, sender: sender)
        }
        preconditionFailure("ECall's keys are a CallKey's, not indexed")
    }

    private func fill<F: IndexedFormat>(_ store: FrameKeyStore<F>, shared: KeyMaterial?, own: [String: [UInt64: KeyMaterial]],
                                        sender: String) throws(KeyError) -> FrameProtection {
        if let shared { try store.set(participant: nil, index: sharedIndex, material: shared) }
        for (participant, keys) in own {
            for (index, material) in keys { try store.set(participant: participant, index: index, material: material) }
        }
        var protection = IndexedProtection(store: store, sender: sender, sealingIndex: sealingIndex, keyWait: keyWait)
        protection.participantIDs = participantIDs
        return .indexed(protection)
    }
}
