import Foundation
import Locking
import Proof
import Testing

/// The canonical form and signatures read the same by another implementation:
/// scripts/verify-proof.py (Python's json and `cryptography`, Debian python3-cryptography).
@Suite struct PythonCrossTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/verify-proof.py").path

    /// Runs the script on `dir`, waiting on a thread of its own (never on the cooperative pool).
    static func python(_ dir: URL) async throws -> (Int32, String) {
        try await OffPool.run {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            p.arguments = [script, dir.path]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }

    /// A manifest written by hand, with what implementations most often read differently:
    /// escapes (`\u00e9`, `\/`, a surrogate pair, control characters), non-ASCII names sorted by
    /// UTF-16, numbers in every form (exponents, -0, 1e21, 1e-7, integers past 2^53).
    static let manifestText = #"""
    {
      "room" : 1234, "janus" : "ws:\/\/127.0.0.1:8188", "e2ee" : true,
      "started" : "2026-11-25T22:00:00.000Z", "ended" : "2026-11-25T22:10:00.125Z",
      "feeds" : [ { "display" : "7:Zo\u00eb \ud83d\ude00 \"q\" \\ \t\u001f\u007f", "file" : "7-z.opus", "n" : [1.50e1, 1E2, -0.0, 0.1, 1e21, 1e-7, 12345678901234567890, 333333333.33333333, 5e-324] } ],
      "\u20ac" : 1, "\r" : 2, "\ufb33" : 3, "\u00f6" : 4, "\ud83d\ude00" : 5, "a" : { "z" : null, "b" : false },
      "proof" : { "version" : 1, "algorithm" : "ALG", "public_key" : "KEY", "fingerprint" : "FP", "files" : [], "signature" : "SIG" }
    }
    """#

    @Test("a hand-written manifest signed here verifies in Python, for both key types; one changed escape does not", arguments: SigningKey.Kind.allCases)
    func pythonAgrees(_ kind: SigningKey.Kind) async throws {
        let dir = try ChainTests.folder()
        let key = SigningKey.generate(kind)
        let text = Self.manifestText.replacingOccurrences(of: "\"ALG\"", with: "\"\(key.publicKey.algorithm)\"")
            .replacingOccurrences(of: "\"KEY\"", with: "\"\(key.publicKey.der.base64EncodedString())\"")
            .replacingOccurrences(of: "\"FP\"", with: "\"\(key.publicKey.fingerprint)\"")
        let value = try JSONValue.parse(Data(text.utf8)).removing("signature", at: ["proof"])
        let signature = try key.sign(Canonical.bytes(value)).base64EncodedString()
        let url = dir.appendingPathComponent("manifest.json")
        try text.replacingOccurrences(of: "\"SIG\"", with: "\"\(signature)\"").write(to: url, atomically: true, encoding: .utf8)
        // A chain too, of this key.
        try ChainTests.append([1, 2, 3], to: dir.appendingPathComponent("7-z.opus"))
        let chain = ProofChain(directory: dir, key: key, identity: ChainTests.identity)
        for _ in 0..<3 { try await chain.checkpoint(files: ["7-z.opus"], counters: .object(["name": .string("Zoë\n😀")])) }
        let (status, out) = try await Self.python(dir)
        #expect(status == 0 && out.contains("manifest signed by \(key.publicKey.fingerprint)") && out.contains("checkpoints: 3"), "\(out)")
        // The same text with one escape meaning another character: both implementations refuse it.
        let changed = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: #"Zo\u00eb"#, with: #"Zo\u00ea"#)
        try changed.write(to: url, atomically: true, encoding: .utf8)
        let (status2, out2) = try await Self.python(dir)
        #expect(status2 == 1 && out2.contains("InvalidSignature"), "\(out2)")
    }
}
