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

    func validate() throws {
        try OptionCheck.count(ratchetWindow, "--ratchet-window", in: 0...64)
        try OptionCheck.count(keyRingSize, "--key-ring-size", in: 1...256)
        try OptionCheck.seconds(keyWait, "--key-wait", zeroAllowed: true)
        switch frameFormat {
        case .ecall:
            let given = [ratchetSalt != nil, magicBytes != nil, keyFeed != nil].contains(true)
            if given { throw ValidationError("--ratchet-salt, --magic-bytes and --key-feed are for --frame-format framecryptor or sframe") }
        case .framecryptor:
            guard ratchetSalt != nil else {
                throw ValidationError("--frame-format framecryptor needs --ratchet-salt: the salt the clients derive keys with (LiveKit's default is LKFrameEncryptionKey)")
            }
            guard keyIndex < UInt64(keyRingSize) else { throw ValidationError("--key-index takes 0 to \(keyRingSize - 1) (--key-ring-size \(keyRingSize))") }
        case .sframe:
            guard SFrameSuite(name: sframeSuite) != nil else {
                throw ValidationError("--sframe-suite \(sframeSuite) is not one of \(SFrameSuite.allCases.map(\.name).joined(separator: ", "))")
            }
        }
    }

    /// `text` as bytes: `hex:…` decoded, anything else its UTF-8.
    static func bytes(_ text: String, option: String) throws -> [UInt8] {
        guard text.hasPrefix("hex:") else { return Array(text.utf8) }
        do { return try KeyMaterial(hex: String(text.dropFirst(4))).bytes } catch {
            throw CLIFailure("\(option) \(text): after hex: give an even number of hex characters", code: .badKey)
        }
    }

    /// The protection of a call in this format: its store filled with `shared` (at index 0, or
    /// the KID for SFrame) and `own` keys; this bot seals as `sender`.
    func protection(shared: KeyMaterial?, own: [String: [UInt64: KeyMaterial]], sender: String) throws -> FrameProtection {
        switch frameFormat {
        case .ecall:
            preconditionFailure("ECall's keys are KeyOptions' own")
        case .framecryptor:
            return try fill(FrameKeyStore(format: try frameCryptor()), shared: shared, at: 0, own: own,
                            sender: sender, sealing: keyIndex)
        case .sframe:
            return try fill(FrameKeyStore(format: sframe()), shared: shared, at: sframeKid, own: own,
                            sender: sender, sealing: sframeKid)
        }
    }

    func frameCryptor() throws -> FrameCryptorFormat {
        FrameCryptorFormat(options: FrameCryptorOptions(
            ratchetSalt: try Self.bytes(ratchetSalt ?? "", option: "--ratchet-salt"),
            magicBytes: try magicBytes.map { try Self.bytes($0, option: "--magic-bytes") } ?? [],
            ratchetWindow: ratchetWindow, keyRingSize: keyRingSize))
    }

    func sframe() -> SFrameFormat {
        SFrameFormat(suite: SFrameSuite(name: sframeSuite)!)  // validated
    }

    private func fill<F: IndexedFormat>(_ store: FrameKeyStore<F>, shared: KeyMaterial?, at sharedIndex: UInt64,
                                        own: [String: [UInt64: KeyMaterial]], sender: String, sealing: UInt64) throws -> FrameProtection {
        do {
            if let shared { try store.set(participant: nil, index: sharedIndex, material: shared) }
            for (participant, keys) in own {
                for (index, material) in keys { try store.set(participant: participant, index: index, material: material) }
            }
        } catch {
            throw CLIFailure("the \(frameFormat.rawValue) key: \(error)", code: .badKey)
        }
        return .indexed(IndexedProtection(store: store, sender: sender, sealingIndex: sealing, keyWait: .seconds(keyWait)))
    }
}
