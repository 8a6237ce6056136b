import ArgumentParser
import FrameCrypto
import Foundation

/// `sfubot frame open|seal`: one frame by hand, every byte named, so an integrator can check a
/// frame captured from their client against ours.
struct FrameTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frame",
        abstract: "Open or seal one frame by hand and show what each byte is.",
        discussion: """
            sfubot frame open --frame-format framecryptor --ratchet-salt LKFrameEncryptionKey --key-hex 00… --hex <frame>
            prints the frame's fields (clear header, ciphertext, tag, IV, key index; SFrame's header, KID, CTR) and the \
            plaintext. Video frames are given and printed as libwebrtc's encoded transform hands them to JavaScript: \
            H.264 Annex-B (start codes). The key is never printed.
            """)

    enum Action: String, ExpressibleByArgument { case open, seal }

    @Argument(help: "open or seal.")
    var action: Action

    @OptionGroup var format: FormatOptions

    @Option(help: ArgumentHelp("Key material as hex (ECall: the 64-character call key).", valueName: "hex"))
    var keyHex: String

    @Option(help: "audio (Opus) or video (H.264 access unit).", transform: { text in
        guard let k = MediaKind(rawValue: text) else { throw ValidationError("--kind takes audio or video, got \(text)") }
        return k
    })
    var kind: MediaKind = .audio

    @Option(help: ArgumentHelp("The frame (open) or the plaintext (seal), as hex.", valueName: "hex"))
    var hex: String

    func run() throws {
        do { try open() } catch let e as CLIFailure { e.exit() }
    }

    private func open() throws {
        let material: KeyMaterial
        do { material = try KeyMaterial(hex: keyHex) } catch { throw CLIFailure("--key-hex: \(error)", code: .badKey) }
        guard let bytes = try? KeyMaterial(hex: hex).bytes else {
            throw CLIFailure("--hex: give the frame as an even number of hex characters", code: .badKey)
        }
        // Our codecs carry H.264 length-prefixed, as the pipelines do; people capture Annex-B.
        let input = kind == .video ? AnnexB.toLengthPrefixed(bytes) : bytes
        switch format.frameFormat {
        case .ecall: try ECallFrameTool.run(action, kind: kind, material: material, input: input)
        case .framecryptor: try run(try format.frameCryptor(), material: material, input: input, annexB: bytes, sealIndex: format.keyIndex)
        case .sframe: try run(format.sframe(), material: material, input: input, annexB: bytes, sealIndex: format.sframeKid)
        }
    }

    private func run<F: IndexedFormat>(_ f: F, material: KeyMaterial, input avc: [UInt8], annexB: [UInt8], sealIndex: UInt64) throws {
        switch action {
        case .open:
            // What the opener takes: length-prefixed, or for some formats Annex-B as given.
            let input = kind == .video && f.opensAnnexB ? annexB : avc
            let index: UInt64
            switch input.withUnsafeBytes({ p in Result { () throws(DropReason) in try f.keyIndex(of: p, kind: kind) } }) {
            case .success(let i): index = i
            case .failure(let e): throw CLIFailure("the frame cannot be opened whatever the key: \(e.rawValue)", code: .badKey)
            }
            let key = try derive(f, material, index)
            var out = [UInt8](repeating: 0, count: max(1, input.withUnsafeBytes { f.openedCapacity($0, kind: kind) }))
            print(Self.describe(avc.withUnsafeBytes { f.layout(of: $0, kind: kind) }, of: avc))
            let opened = input.withUnsafeBytes { p in
                out.withUnsafeMutableBytes { o in Result { () throws(DropReason) in try f.open(p, kind: kind, key: key, into: o) } }
            }
            switch opened {
            case .success(let n):
                print("opened with key index \(index): \(n) bytes")
                let plain = Array(out[..<n])
                print("plaintext  \(Self.hex(kind == .video && !f.opensAnnexB ? AnnexB.fromLengthPrefixed(plain) : plain))")
            case .failure(let e):
                throw CLIFailure("key index \(index): the key given does not open this frame (\(e.rawValue))", code: .badKey)
            }
        case .seal:
            let input = avc
            let key = try derive(f, material, sealIndex)
            let capacity = input.withUnsafeBytes { f.sealedCapacity($0, kind: kind) } ?? 0
            guard capacity > 0 else { throw CLIFailure("this \(kind.rawValue) frame cannot be sealed (is it a whole access unit?)", code: .badKey) }
            var out = [UInt8](repeating: 0, count: capacity)
            let state = f.makeStreamState(kind: kind)
            let sealed = input.withUnsafeBytes { p in
                out.withUnsafeMutableBytes { o in Result { () throws(FrameError) in try f.seal(p, kind: kind, key: key, index: sealIndex, state: state, into: o) } }
            }
            let n: Int
            switch sealed {
            case .success(let count): n = count
            case .failure(let e): throw CLIFailure("sealing failed: \(e)", code: .badKey)
            }
            let frame = Array(out[..<n])
            print(Self.describe(frame.withUnsafeBytes { f.layout(of: $0, kind: kind) }, of: frame))
            print("sealed     \(Self.hex(kind == .video ? AnnexB.fromLengthPrefixed(frame) : frame))")
        }
    }

    private func derive<F: IndexedFormat>(_ f: F, _ material: KeyMaterial, _ index: UInt64) throws -> F.Key {
        do { return try f.key(from: material, index: index) } catch { throw CLIFailure("--key-hex: \(error)", code: .badKey) }
    }

    static func describe(_ fields: [FrameField], of bytes: [UInt8]) -> String {
        let width = fields.map(\.name.count).max() ?? 0
        return fields.map { f in
            let shown = bytes[f.range.clamped(to: 0..<bytes.count)]
            let text = shown.count > 48 ? hex(Array(shown.prefix(24))) + "…" + hex(Array(shown.suffix(8))) : hex(Array(shown))
            return "\(f.name.padding(toLength: width, withPad: " ", startingAt: 0))  [\(f.range.lowerBound)..<\(f.range.upperBound)] \(f.range.count) bytes  \(text)"
        }.joined(separator: "\n")
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
