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

    @Option(help: "audio (Opus) or video (H.264 access unit).")
    var kind: MediaKind = .audio

    @Option(help: ArgumentHelp("The frame (open) or the plaintext (seal), as hex.", valueName: "hex"))
    var hex: String

    func run() throws {
        let material: KeyMaterial
        do { material = try KeyMaterial(hex: keyHex) } catch { throw CLIFailure("--key-hex: \(error)", code: .badKey) }
        guard let bytes = try? KeyMaterial(hex: hex).bytes else {
            throw CLIFailure("--hex: give the frame as an even number of hex characters", code: .badKey)
        }
        // Our codecs carry H.264 length-prefixed, as the pipelines do; people capture Annex-B.
        let input = kind == .video ? AnnexB.toLengthPrefixed(bytes) : bytes
        switch format.frameFormat {
        case .ecall: try ECallFrameTool.run(action, kind: kind, material: material, input: input)
        case .framecryptor: try run(try format.frameCryptor(), material: material, input: input, sealIndex: format.keyIndex)
        case .sframe: try run(format.sframe(), material: material, input: input, sealIndex: format.sframeKid)
        }
    }

    private func run<F: IndexedFormat>(_ f: F, material: KeyMaterial, input: [UInt8], sealIndex: UInt64) throws {
        switch action {
        case .open:
            let index: UInt64
            do { index = try input.withUnsafeBytes { p throws(DropReason) in try f.keyIndex(of: p, kind: kind) } } catch {
                throw CLIFailure("the frame cannot be opened whatever the key: \(error.rawValue)", code: .badKey)
            }
            let key = try derive(f, material, index)
            var out = [UInt8](repeating: 0, count: max(1, input.withUnsafeBytes { f.openedCapacity($0, kind: kind) }))
            print(Self.describe(input.withUnsafeBytes { f.layout(of: $0, kind: kind) }, of: input))
            do {
                let n = try input.withUnsafeBytes { p throws(DropReason) in
                    try out.withUnsafeMutableBytes { o throws(DropReason) in try f.open(p, kind: kind, key: key, into: o) }
                }
                print("opened with key index \(index): \(n) bytes")
                print("plaintext  \(Self.hex(kind == .video ? AnnexB.fromLengthPrefixed(Array(out[..<n])) : Array(out[..<n])))")
            } catch {
                throw CLIFailure("key index \(index): the key given does not open this frame (\(error.rawValue))", code: .badKey)
            }
        case .seal:
            let key = try derive(f, material, sealIndex)
            let capacity = input.withUnsafeBytes { f.sealedCapacity($0, kind: kind) } ?? 0
            guard capacity > 0 else { throw CLIFailure("this \(kind.rawValue) frame cannot be sealed (is it a whole access unit?)", code: .badKey) }
            var out = [UInt8](repeating: 0, count: capacity)
            let state = f.makeStreamState(kind: kind)
            let n: Int
            do {
                n = try input.withUnsafeBytes { p throws(FrameError) in
                    try out.withUnsafeMutableBytes { o throws(FrameError) in try f.seal(p, kind: kind, key: key, index: sealIndex, state: state, into: o) }
                }
            } catch { throw CLIFailure("sealing failed: \(error)", code: .badKey) }
            let sealed = Array(out[..<n])
            print(Self.describe(sealed.withUnsafeBytes { f.layout(of: $0, kind: kind) }, of: sealed))
            print("sealed     \(Self.hex(kind == .video ? AnnexB.fromLengthPrefixed(sealed) : sealed))")
        }
    }

    private func derive<F: IndexedFormat>(_ f: F, _ material: KeyMaterial, _ index: UInt64) throws -> F.Key {
        do { return try f.key(from: material, index: index) } catch { throw CLIFailure("--key-hex: \(error)", code: .badKey) }
    }

    static func describe(_ fields: [FrameField], of bytes: [UInt8]) -> String {
        fields.map { f in
            let shown = bytes[f.range.clamped(to: 0..<bytes.count)]
            let text = shown.count > 48 ? hex(Array(shown.prefix(24))) + "…" + hex(Array(shown.suffix(8))) : hex(Array(shown))
            return "\(f.name.padding(toLength: 16, withPad: " ", startingAt: 0)) [\(f.range.lowerBound)..<\(f.range.upperBound)] \(f.range.count) bytes  \(text)"
        }.joined(separator: "\n")
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
