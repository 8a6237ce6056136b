import Foundation
import Proof
import Testing

/// A recording folder made here as the recorder makes one (no Janus): an Ogg-like and a
/// Matroska-like file checkpointed every round, the live (unsigned) manifest.json beside them,
/// and, once finished, the last checkpoint marked `final` and a signed manifest naming it.
enum RecordingFixture {
    static let ogg = "1-ann.opus", mkv = "2-ben.mkv"
    static let openCluster: [UInt8] = [0x1F, 0x43, 0xB6, 0x75, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]

    static func identity(_ id: String = "rec-\(UUID().uuidString.prefix(8))", room: Int64 = 1234, started: String = "2026-11-25T22:00:00.000Z") -> RecordingIdentity {
        RecordingIdentity(id: id, room: room, janus: "ws://127.0.0.1:8188", started: started, job: nil)
    }

    /// `rounds` checkpoints; finished: the Matroska file closed and its cues written, a final
    /// checkpoint, the signed manifest. `matroska: false`: the Ogg file alone.
    static func make(_ identity: RecordingIdentity = identity(), key: SigningKey = .generate(.p256), rounds: Int = 3, finished: Bool = true,
                     matroska: Bool = true, in dir: URL? = nil) async throws -> (URL, SigningKey) {
        let dir = try dir ?? ChainTests.folder()
        let chain = ProofChain(directory: dir, key: key, identity: identity)
        let files = matroska ? [ogg, mkv] : [ogg]
        if matroska { try ChainTests.append([0x1A, 0x45, 0xDF, 0xA3], to: dir.appendingPathComponent(mkv)) }
        for round in 0..<rounds {
            try ChainTests.append((0..<1000).map { UInt8(($0 * 3 + round) % 251) }, to: dir.appendingPathComponent(ogg))
            if matroska { try ChainTests.append([UInt8](repeating: UInt8(round), count: 500) + openCluster + [UInt8](repeating: 9, count: 300), to: dir.appendingPathComponent(mkv)) }
            try await chain.checkpoint(files: files, counters: .object(["round": .number(Double(round))]))
        }
        try write(live(identity, files: files, ended: nil), to: dir)
        guard finished else { return (dir, key) }
        if matroska {
            let url = dir.appendingPathComponent(mkv)
            var data = try Data(contentsOf: url)
            for i in 0..<rounds { data[4 + i * 812 + 500 + 5] = 0x01; data[4 + i * 812 + 500 + 6] = 0 }
            data.append(contentsOf: [UInt8](repeating: 0xC5, count: 100))
            try data.write(to: url)
        }
        try await chain.checkpoint(files: files, counters: .null, final: true)
        try seal(identity, files: files, chain: chain, key: key, in: dir)
        return (dir, key)
    }

    /// The manifest the recorder writes every second (unsigned).
    static func live(_ identity: RecordingIdentity, files: [String], ended: String?) -> JSONValue {
        .object([
            "room": .number(Double(identity.room)), "janus": .string(identity.janus), "e2ee": .bool(true), "recording": .string(identity.id),
            "started": .string(identity.started), "ended": ended.map { .string($0) } ?? .null,
            "feeds": .array(files.map { .object(["file": .string($0), "display": .string("7:Ann")]) }),
        ])
    }

    /// The finished manifest with its signed `proof`, as `RecordingProof.seal` writes it.
    static func seal(_ identity: RecordingIdentity, files: [String], chain: ProofChain, key: SigningKey, in dir: URL) throws {
        guard case .object(var m) = live(identity, files: files, ended: "2026-11-25T22:10:00.000Z") else { return }
        let signed = try files.map { name -> JSONValue in
            let d = try FileDigest.of(dir.appendingPathComponent(name))
            return .object(["name": .string(name), "bytes": .number(Double(d.size)), "sha256": .string(d.sha256)])
        }
        let end = chain.end
        m["proof"] = .object([
            "version": .number(2), "algorithm": .string(key.publicKey.algorithm), "public_key": .string(key.publicKey.der.base64EncodedString()),
            "fingerprint": .string(key.publicKey.fingerprint), "signed_at": .string("2026-11-25T22:10:01.000Z"), "files": .array(signed),
            "participants": .array([]), "key_epochs": .array([]), "gaps": .array([]), "recording": identity.json,
            "chain": .object(["checkpoints": .number(Double(end.count)), "last": .string(end.last ?? "")]),
        ])
        let signature = try key.sign(Canonical.bytes(.object(m)))
        m["proof"] = m["proof"].map { p in
            guard case .object(var o) = p else { return p }
            o["signature"] = .string(signature.base64EncodedString())
            return .object(o)
        }
        try write(.object(m), to: dir)
    }

    static func write(_ manifest: JSONValue, to dir: URL) throws {
        try Canonical.bytes(manifest).write(to: dir.appendingPathComponent("manifest.json"))
    }

    /// `proof.jsonl` cut to its first `n` lines.
    static func keepLines(_ n: Int, in dir: URL) throws {
        let url = dir.appendingPathComponent(ProofChain.fileName)
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        try (lines.prefix(n).joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
    }

    /// Checkpoint `n`'s line, parsed.
    static func checkpoint(_ n: Int, in dir: URL) throws -> JSONValue {
        let lines = try String(contentsOf: dir.appendingPathComponent(ProofChain.fileName), encoding: .utf8).split(separator: "\n")
        return try JSONValue.parse(Data(lines[n - 1].utf8))
    }
}
