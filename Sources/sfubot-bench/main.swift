// Frame crypto benchmark (not a test): ns per audio frame seal and open at the sizes a call
// carries, next to `openssl speed -evp aes-256-gcm` for the same sizes on this machine.
// Build in release: `make bench`.
import FrameCrypto
import Foundation

let sizes = [120, 1024, 5 * 1024, 50 * 1024]
let key = CallKey.random()
let ring = KeyRing(current: key)

/// Runs `body` for about `seconds` and returns ns per call.
func measure(seconds: Double = 0.5, _ body: () -> Void) -> Double {
    for _ in 0..<100 { body() }  // warm up
    var iterations = 0
    let clock = ContinuousClock()
    let start = clock.now
    var elapsed = Duration.zero
    while elapsed < .seconds(seconds) {
        for _ in 0..<100 { body() }
        iterations += 100
        elapsed = clock.now - start
    }
    let (s, atto) = elapsed.components
    return (Double(s) * 1e9 + Double(atto) / 1e9) / Double(iterations)
}

/// ns per operation of OpenSSL's AES-256-GCM at `size` bytes, or nil without openssl.
func opensslNanoseconds(_ size: Int) -> Double? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["openssl", "speed", "-evp", "aes-256-gcm", "-bytes", "\(size)", "-seconds", "1", "-mr"]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    // "+F:<n>:AES-256-GCM:<bytes per second>"
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix("+F:") {
        if let rate = line.split(separator: ":").last.flatMap({ Double($0) }), rate > 0 { return 1e9 * Double(size) / rate }
    }
    return nil
}

// `sfubot-bench --ops seal|open N`: N operations on a 120 B frame and nothing else, for
// counting heap allocations under `valgrind` (difference of two N).
let args = CommandLine.arguments
// `sfubot-bench --mjr`: only the `mjr decrypt` benchmark.
// `sfubot-bench receive-limit …`: only the receive limit (ReceiveLimitBench.swift).
if args.count >= 2, args[1] == "receive-limit" {
    exit(ReceiveLimitBench.run(args.dropFirst(2)))
}
// `sfubot-bench send-limit …`: only the send limit (SendLimitBench.swift).
if args.count >= 2, args[1] == "send-limit" {
    exit(SendLimitBench.run(args.dropFirst(2)))
}
if args.count == 2, args[1] == "--mjr" {
    MjrBench.run()
    exit(0)
}
if args.count == 4, args[1] == "--ops", let n = Int(args[3]) {
    let plain = [UInt8](repeating: 1, count: 120)
    var sealed = [UInt8](repeating: 0, count: 120 + AudioFrame.overhead)
    var opened = [UInt8](repeating: 0, count: 120)
    let candidates = ring.candidates
    plain.withUnsafeBytes { p in
        sealed.withUnsafeMutableBytes { o in
            if args[2] == "seal" { for _ in 0..<n { _ = try? AudioFrame.seal(p, key: key, into: o) } } else { _ = try? AudioFrame.seal(p, key: key, into: o) }
        }
    }
    if args[2] == "open" {
        sealed.withUnsafeBytes { f in opened.withUnsafeMutableBytes { o in for _ in 0..<n { _ = try? AudioFrame.open(f, keys: candidates, into: o) } } }
    }
    exit(0)
}

func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : String(repeating: " ", count: n - s.count) + s }
func fmt(_ x: Double) -> String { String(format: "%.0f", x) }

print("sfubot frame crypto: ECall audio frame (0xFF ‖ nonce ‖ ct ‖ tag), AES-256-GCM on libcrypto contexts kept per key")
print("\(ProcessInfo.processInfo.activeProcessorCount) cores; OpenSSL for reference: \(opensslNanoseconds(16) != nil ? "openssl speed -evp aes-256-gcm" : "not found")")
print([pad("frame", 8), pad("seal ns", 10), pad("open ns", 10), pad("openssl ns", 11), pad("seal/ossl", 10), pad("open/ossl", 10), pad("seal MB/s", 10)].joined(separator: " "))
var ecallAudioOpenNs: [Int: Double] = [:]
for size in sizes {
    let plain = [UInt8](repeating: 0x5A, count: size)
    var sealed = [UInt8](repeating: 0, count: size + AudioFrame.overhead)
    var opened = [UInt8](repeating: 0, count: size)
    let sealNs = plain.withUnsafeBytes { p in
        sealed.withUnsafeMutableBytes { o in measure { _ = try? AudioFrame.seal(p, key: key, into: o) } }
    }
    let openNs = sealed.withUnsafeBytes { f in
        opened.withUnsafeMutableBytes { o in measure { _ = try? AudioFrame.open(f, keys: ring.candidates, into: o) } }
    }
    precondition(opened == plain, "benchmark frames must round-trip")
    ecallAudioOpenNs[size] = openNs
    let ossl = opensslNanoseconds(size)
    let ratio = { (x: Double) in ossl.map { String(format: "%.1fx", x / $0) } ?? "-" }
    print([pad(size >= 1024 ? "\(size / 1024) KB" : "\(size) B", 8), pad(fmt(sealNs), 10), pad(fmt(openNs), 10),
           pad(ossl.map(fmt) ?? "-", 11), pad(ratio(sealNs), 10), pad(ratio(openNs), 10),
           pad(String(format: "%.0f", Double(size) / sealNs * 1e3), 10)].joined(separator: " "))
}

// Video: an access unit of SPS, PPS and one IDR slice of the given size, length-prefixed
// (stream-format=avc) as the bot's pipeline carries it.
print("\nECall video frame (slice: 2 clear bytes ‖ nonce ‖ ct ‖ tag, re-sealed until start-code safe)")
print([pad("frame", 8), pad("seal ns", 10), pad("open ns", 10), pad("openssl ns", 11), pad("seal/ossl", 10), pad("open/ossl", 10)].joined(separator: " "))
for size in [5 * 1024, 50 * 1024] {
    func prefixed(_ n: [UInt8]) -> [UInt8] { [UInt8(n.count >> 24), UInt8(n.count >> 16 & 0xFF), UInt8(n.count >> 8 & 0xFF), UInt8(n.count & 0xFF)] + n }
    let slice: [UInt8] = [0x65, 0x88] + [UInt8](repeating: 0x5A, count: size - 2)
    let au = prefixed([0x67, 0x42, 0xE0, 0x1F]) + prefixed([0x68, 0xCE, 0x3C, 0x80]) + prefixed(slice)
    var sealed = [UInt8](repeating: 0, count: au.withUnsafeBytes { VideoFrame.sealedCapacity($0)! })
    var opened = [UInt8](repeating: 0, count: sealed.count)
    var sealedCount = 0
    let sealNs = au.withUnsafeBytes { a in
        sealed.withUnsafeMutableBytes { o in measure { sealedCount = (try? VideoFrame.seal(a, key: key, into: o)) ?? 0 } }
    }
    var openedCount = 0
    let openNs = sealed.withUnsafeBytes { f in
        let frame = UnsafeRawBufferPointer(rebasing: f[..<sealedCount])
        return opened.withUnsafeMutableBytes { o in measure { openedCount = (try? VideoFrame.open(frame, keys: ring.candidates, into: o)) ?? 0 } }
    }
    precondition(Array(opened[..<openedCount]) == au, "video benchmark frames must round-trip")
    let ossl = opensslNanoseconds(size)
    let ratio = { (x: Double) in ossl.map { String(format: "%.1fx", x / $0) } ?? "-" }
    print([pad("\(size / 1024) KB", 8), pad(fmt(sealNs), 10), pad(fmt(openNs), 10), pad(ossl.map(fmt) ?? "-", 11),
           pad(ratio(sealNs), 10), pad(ratio(openNs), 10)].joined(separator: " "))
}

FormatBench.run(ecallAudioNs: ecallAudioOpenNs)
MjrBench.run()
