import ArgumentParser
import Bot
import FrameCrypto
import Foundation

/// The frame format of the call and the options each format takes (docs/frame-formats.md).
struct FormatOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The frame layout the call's clients use: ecall (ECall's phones, one AES-256 call key), framecryptor (libwebrtc's FrameCryptor: PQSRTC, LiveKit, flutter-webrtc; per-participant keys by index) or sframe (RFC 9605).",
        valueName: "format"), transform: Self.format)
    var frameFormat: FrameFormatName = .ecall

    static func format(_ text: String) throws -> FrameFormatName {
        guard let f = FrameFormatName(rawValue: text) else {
            throw ValidationError("--frame-format takes \(FrameFormatName.allCases.map(\.rawValue).joined(separator: ", ")), got \(text)")
        }
        return f
    }

    @Option(help: ArgumentHelp(
        "framecryptor: the salt of the clients' key derivation and ratchet (PQSRTC: the app's ratchet salt; LiveKit's default is LKFrameEncryptionKey), as text or hex:….",
        valueName: "text|hex:…"))
    var ratchetSalt: String?

    @Option(help: ArgumentHelp(
        "framecryptor: the \"uncrypted magic bytes\" that mark a clear frame (text or hex:…); such frames are counted as unencrypted and never recorded.",
        valueName: "text|hex:…"))
    var magicBytes: String?

    @Option(help: "framecryptor: how many ratchet steps a receiver tries on a frame that fails (PQSRTC: 8).")
    var ratchetWindow = 8

    @Option(help: "framecryptor: the key ring size of the clients: key indexes run 0 to N-1 (PQSRTC: 16).")
    var keyRingSize = 16

    @Option(help: "sframe: the cipher suite (AES_128_GCM_SHA256_128, AES_256_GCM_SHA512_128, AES_128_CTR_HMAC_SHA256_80, _64, _32).")
    var sframeSuite = "AES_128_GCM_SHA256_128"

    @Option(help: "sframe: the KID --key-hex/--key-file is the base key of, and the KID a sender seals with.")
    var sframeKid: UInt64 = 0

    @Option(help: "framecryptor: the key index a sender seals with (its key at that index, from --key-hex (index 0), --key-map or --key-feed).")
    var keyIndex: UInt64 = 0

    @Option(help: ArgumentHelp(
        "framecryptor, sframe: keys handed in while the call runs, one JSON line each: {\"participant\": \"<id>\", \"index\": <n>, \"key\": \"<hex>\"} (no participant: a shared key) or {\"participant\": \"<id>\", \"index\": <n>, \"ratchet\": true}. From - (standard input), a FIFO, a Unix socket or a file.",
        valueName: "path"))
    var keyFeed: String?

    @Option(help: "framecryptor, sframe: how long frames naming a key not handed in yet wait for it before they are dropped (counted missing_key).")
    var keyWait: Double = 2

    @Option(help: ArgumentHelp(
        "framecryptor, sframe: how a publisher's participant id (whose keys open its frames) is read: display-prefix (the Janus display's \"<id>:\" part, as PQSRTC and ECall set it; else the feed id), display (the whole display) or feed (the Janus feed id).",
        valueName: "rule"), transform: Self.participantRule)
    var participantId: ParticipantIDRule?

    static func participantRule(_ text: String) throws -> ParticipantIDRule {
        guard let rule = ParticipantIDRule(rawValue: text) else {
            throw ValidationError("--participant-id takes \(ParticipantIDRule.allCases.map(\.rawValue).joined(separator: ", ")), got \(text)")
        }
        return rule
    }

    /// The options as the settings serve's jobs take too, checked by the same code.
    var settings: FrameFormatSettings {
        var s = FrameFormatSettings()
        s.frame = frameFormat
        s.ratchetSalt = ratchetSalt
        s.magicBytes = magicBytes
        s.ratchetWindow = ratchetWindow
        s.keyRingSize = keyRingSize
        s.sframeSuite = sframeSuite
        s.sframeKid = sframeKid
        s.keyIndex = keyIndex
        s.keyWaitSeconds = keyWait
        s.participantId = participantId
        return s
    }

    /// The checked settings; a refusal is a usage error naming the option.
    func choice() throws -> FrameFormatChoice {
        do { return try settings.checked(naming: \.option) } catch { throw ValidationError(error.message) }
    }

    func validate() throws {
        _ = try choice()
        if frameFormat == .ecall, keyFeed != nil {
            throw ValidationError("--key-feed is for --frame-format framecryptor or sframe: ECall's call key does not change while the call runs")
        }
    }

    /// The protection of a call in this format: its store filled with `shared` (at index 0, or
    /// the KID for SFrame) and `own` keys; this bot seals as `sender`.
    func protection(shared: KeyMaterial?, own: [String: [UInt64: KeyMaterial]], sender: String) throws -> FrameProtection {
        let choice = try choice()
        do { return try choice.protection(shared: shared, own: own, sender: sender) } catch {
            throw CLIFailure("the \(frameFormat.rawValue) key: \(error)", code: .badKey)
        }
    }

    func frameCryptor() throws -> FrameCryptorFormat {
        guard let options = try choice().frameCryptor else { throw ValidationError("--frame-format is \(frameFormat.rawValue), not framecryptor") }
        return FrameCryptorFormat(options: options)
    }

    func sframe() throws -> SFrameFormat {
        guard let suite = try choice().sframeSuite else { throw ValidationError("--frame-format is \(frameFormat.rawValue), not sframe") }
        return SFrameFormat(suite: suite)
    }
}
