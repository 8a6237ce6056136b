public import Foundation
import Locking
public import Proof
import FrameCrypto

extension MjrManifest {
    /// This manifest with its signed `proof`: every output file and every `.mjr` input by
    /// SHA-256 and size (hashed on a thread of its own), the senders and their frames. No key
    /// epochs or gaps: the keys came from a key, a key log or a map, and Janus's files have no
    /// recorder outages of ours.
    public func signed(with key: SigningKey, directory: URL, inputs: [String]) async throws -> MjrManifest {
        var m = self
        let outputs = Array(Set(m.outputs.compactMap(\.file))).sorted()
        let dir = directory.standardizedFileURL.path + "/"
        let relative = outputs.map { $0.hasPrefix(dir) ? String($0.dropFirst(dir.count)) : $0 }
        let absolute = Array(Set(inputs.map { URL(fileURLWithPath: $0).standardizedFileURL.path })).sorted()
        let (files, ins) = await OffPool.run { () -> ([ManifestProof.File], [ManifestProof.File]) in
            func hash(_ names: [String]) -> [ManifestProof.File] {
                names.compactMap { n in
                    let url = n.hasPrefix("/") ? URL(fileURLWithPath: n) : directory.appendingPathComponent(n)
                    return (try? FileDigest.of(url)).map { .init(name: n, bytes: $0.size, sha256: $0.sha256) }
                }
            }
            return (hash(relative), hash(absolute))
        }
        var bySender: [String: ManifestProof.Participant] = [:]
        for o in m.outputs {
            for t in o.tracks {
                let who = t.sender ?? t.input
                var p = bySender[who] ?? .init(userID: who, display: who, files: [], frames: 0)
                if let f = o.file, !p.files.contains(f) { p.files.append(f) }
                p.frames += t.frames.opened
                bySender[who] = p
            }
        }
        m.proof = ManifestProof(
            algorithm: key.publicKey.algorithm, publicKey: key.publicKey.der.base64EncodedString(), fingerprint: key.publicKey.fingerprint,
            signedAt: Date(), files: files, participants: bySender.values.sorted { $0.userID < $1.userID }, keyEpochs: [], gaps: [],
            chain: nil, signature: nil, inputs: ins)
        let value = try JSONValue.parse(RecordingProof.encoder.encode(m)).removing("signature", at: ["proof"])
        m.proof?.signature = try key.sign(Canonical.bytes(value)).base64EncodedString()
        return m
    }
}
