import FrameCrypto

/// ns per frame of the formats that name their key, through the same seam the pipeline uses
/// (`IndexedFormat`), next to ECall's audio figure: `make bench` prints them.
enum FormatBench {
    static func run(ecallAudioNs: [Int: Double]) {
        let material = try! KeyMaterial((0..<32).map { UInt8($0) })
        print("\nFormats by frame (ns; the key looked up per frame as the pipeline does; ECall's audio figure beside)")
        print([pad("format", 34), pad("frame", 8), pad("seal ns", 10), pad("open ns", 10), pad("ECall open", 11)].joined(separator: " "))
        let fc = FrameCryptorFormat(options: .pqsrtc)
        let sf = SFrameFormat(suite: .aes128GcmSha256_128)
        let sfCtr = SFrameFormat(suite: .aes128CtrHmacSha256_80)
        for size in [120, 1024] {
            let audio = [UInt8(0xF8)] + [UInt8](repeating: 0x5A, count: size - 1)
            row("framecryptor audio", fc, material, audio, .audio, ecallAudioNs[size])
            row("sframe AES_128_GCM_SHA256_128", sf, material, audio, .audio, ecallAudioNs[size])
            row("sframe AES_128_CTR_HMAC_SHA256_80", sfCtr, material, audio, .audio, ecallAudioNs[size])
        }
        for size in [5 * 1024, 50 * 1024] {
            func prefixed(_ n: [UInt8]) -> [UInt8] { [UInt8(n.count >> 24), UInt8(n.count >> 16 & 0xFF), UInt8(n.count >> 8 & 0xFF), UInt8(n.count & 0xFF)] + n }
            let slice: [UInt8] = [0x41, 0x9A] + [UInt8](repeating: 0x5A, count: size - 2)
            row("framecryptor video (delta AU)", fc, material, prefixed(slice), .video, nil)
        }
    }

    private static func row<F: IndexedFormat>(_ name: String, _ f: F, _ material: KeyMaterial, _ plain: [UInt8], _ kind: MediaKind, _ ecall: Double?) {
        let store = FrameKeyStore(format: f)
        let index: UInt64 = 0
        try! store.set(participant: nil, index: index, material: material)
        let state = f.makeStreamState(kind: kind)
        var sealed = [UInt8](repeating: 0, count: plain.withUnsafeBytes { f.sealedCapacity($0, kind: kind)! })
        var n = 0
        let sealNs = plain.withUnsafeBytes { p in
            sealed.withUnsafeMutableBytes { o in
                measure { n = (try? f.seal(p, kind: kind, key: store.key(participant: "a", index: index)!, index: index, state: state, into: o)) ?? 0 }
            }
        }
        // Received video is Annex-B for formats that open it so (see IndexedFormat.opensAnnexB).
        let frame = kind == .video && f.opensAnnexB ? AnnexB.fromLengthPrefixed(Array(sealed[..<n])) : Array(sealed[..<n])
        var opened = [UInt8](repeating: 0, count: frame.withUnsafeBytes { f.openedCapacity($0, kind: kind) })
        var m = 0
        let openNs = frame.withUnsafeBytes { s in
            opened.withUnsafeMutableBytes { o in
                measure {
                    guard let i = try? f.keyIndex(of: s, kind: kind), let key = store.key(participant: "a", index: i) else { return }
                    m = (try? f.open(s, kind: kind, key: key, into: o)) ?? 0
                }
            }
        }
        let back = kind == .video && f.opensAnnexB ? AnnexB.toLengthPrefixed(Array(opened[..<m])) : Array(opened[..<m])
        precondition(back == plain, "\(name): benchmark frames must round-trip")
        let size = plain.count >= 1024 ? "\(plain.count / 1024) KB" : "\(plain.count) B"
        print([pad(name, 34), pad(size, 8), pad(fmt(sealNs), 10), pad(fmt(openNs), 10), pad(ecall.map(fmt) ?? "-", 11)].joined(separator: " "))
    }
}
