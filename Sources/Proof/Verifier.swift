public import Foundation

/// `sfubot verify`: checks a recording folder's signed manifest (`proof` in manifest.json),
/// its checkpoint chain (`proof.jsonl`) and every file they name. Synchronous and blocking:
/// run it from a command, not on the cooperative pool.
public struct Verifier {
    public enum Expected: Sendable {
        case any
        case fingerprint(String)
        case key(VerifyingKey)
    }

    public let directory: URL
    public let expected: Expected
    /// Extensions of media files: any such file in the folder that nothing signed names is reported.
    static let mediaExtensions: Set<String> = ["mkv", "mka", "opus", "ogg", "webm", "mp4", "mjr"]

    public init(directory: URL, expected: Expected = .any) {
        self.directory = directory
        self.expected = expected
    }

    public func run() -> VerifyReport {
        var r = VerifyReport()
        let manifestURL = directory.appendingPathComponent("manifest.json")
        var manifest: JSONValue?
        if let data = FileManager.default.contents(atPath: manifestURL.path) {
            do { manifest = try JSONValue.parse(data) } catch { r.problem("\(error)", file: "manifest.json") }
        }
        r.started = manifest?["started"]?.string
        r.ended = manifest?["ended"]?.string
        let chain = ChainCheck(directory: directory, expected: expected).run(into: &r)
        var listed: Set<String> = []
        if let manifest, let proof = manifest["proof"] {
            r.coveredBy = "manifest"
            listed = checkManifest(manifest, proof: proof, chain: chain, into: &r)
        } else if manifest?["ended"].map({ $0 != .null }) == true {
            r.problem("the recording was finished but manifest.json carries no signed proof", file: "manifest.json")
        }
        if r.coveredBy != "manifest", let last = chain.lastValid {
            r.coveredBy = "checkpoints"
            listed = ChainCheck.checkReach(last, directory: directory, into: &r)
        }
        if r.coveredBy == "none", r.problems.isEmpty { r.problem("nothing in \(directory.path) is signed (no proof in manifest.json, no \(ProofChain.fileName))") }
        for name in ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
        where !name.hasPrefix(".") && Self.mediaExtensions.contains((name as NSString).pathExtension.lowercased()) && !listed.contains(name) {
            r.extraFiles.append(name)
        }
        return r
    }

    /// The manifest's signature, key and files; returns the names of the files it signs.
    func checkManifest(_ manifest: JSONValue, proof: JSONValue, chain: ChainCheck.Outcome, into r: inout VerifyReport) -> Set<String> {
        r.signedAt = proof["signed_at"]?.string
        r.algorithm = proof["algorithm"]?.string
        guard let keyText = proof["public_key"]?.string, let der = Data(base64Encoded: keyText), let key = try? VerifyingKey(der: der) else {
            r.problem("proof.public_key is missing or not a P-256/Ed25519 public key", file: "manifest.json")
            return []
        }
        r.fingerprint = key.fingerprint
        if proof["fingerprint"]?.string != key.fingerprint { r.problem("proof.fingerprint is not the public key's", file: "manifest.json") }
        if proof["algorithm"]?.string != key.algorithm { r.problem("proof.algorithm is not the public key's (\(key.algorithm))", file: "manifest.json") }
        ChainCheck.expect(key, expected, what: "the manifest", into: &r)
        let signed = Canonical.bytes(manifest.removing("signature", at: ["proof"]))
        if let s = proof["signature"]?.string, let sig = Data(base64Encoded: s) {
            if !key.isValid(sig, for: signed) { r.problem("the signature does not match: the manifest was changed after it was signed, or signed by another key", file: "manifest.json") }
        } else {
            r.problem("proof.signature is missing", file: "manifest.json")
        }
        if let c = chain.first, c.fingerprint != key.fingerprint { r.problem("the checkpoints were signed by another key (\(c.fingerprint))", file: ProofChain.fileName) }
        // The chain ends in the checkpoint the manifest names.
        let named = proof["chain"]
        if let n = named?["checkpoints"]?.int, n > 0 {
            if chain.count < n {
                r.problem("the manifest names \(n) checkpoints, \(ProofChain.fileName) holds \(chain.count)", file: ProofChain.fileName)
            } else if chain.hashes[n - 1] != named?["last"]?.string {
                r.problem("checkpoint \(n) is not the one the manifest names as the last", file: ProofChain.fileName, checkpoint: n)
            } else if chain.count > n {
                r.problem("\(chain.count - n) checkpoint(s) after the last one the manifest names", file: ProofChain.fileName, checkpoint: n + 1)
            }
        } else if chain.count > 0 {
            r.problem("the manifest names no checkpoint, \(ProofChain.fileName) holds \(chain.count)", file: ProofChain.fileName)
        }
        var names: Set<String> = []
        for f in proof["files"]?.array ?? [] {
            guard let name = f["name"]?.string, let bytes = f["bytes"]?.int, let hash = f["sha256"]?.string else {
                r.problem("an entry of proof.files lacks name, bytes or sha256", file: "manifest.json")
                continue
            }
            names.insert(name)
            r.files.append("\(name) \(bytes) bytes sha256 \(hash)")
            let url = name.hasPrefix("/") ? URL(fileURLWithPath: name) : directory.appendingPathComponent(name)
            do {
                let d = try FileDigest.of(url)
                if d.size > bytes {
                    r.problem("\(d.size - bytes) byte(s) appended after the signed \(bytes)", file: name, offset: bytes)
                } else if d.size < bytes {
                    r.problem("\(bytes - d.size) byte(s) missing: \(d.size) of the signed \(bytes)", file: name, offset: d.size)
                } else if d.sha256 != hash {
                    r.problem("the contents differ from the signed SHA-256 (same size: bytes were changed or the file was replaced)", file: name)
                }
            } catch .missing {
                r.problem("missing (signed: \(bytes) bytes)", file: name)
            } catch {
                r.problem("cannot be read: \(error)", file: name)
            }
        }
        // Every file the manifest lists is signed.
        let listed = (manifest["feeds"]?.array ?? []).compactMap { $0["file"]?.string } + [manifest["mix"]?.string].compactMap { $0 }
            + (manifest["outputs"]?.array ?? []).compactMap { $0["file"]?.string }
        // The mix is listed by its path; the proof names it relative to the folder when inside it.
        for name in Set(listed).sorted() where !names.contains(name) && !(name.hasPrefix("/") && names.contains((name as NSString).lastPathComponent)) {
            r.problem("listed in the manifest but not signed", file: name)
        }
        checkInputs(proof["inputs"]?.array ?? [], into: &r)
        r.participants = (proof["participants"]?.array ?? []).map { p in
            "\(p["display"]?.string ?? "?"): \(p["frames"]?.int ?? 0) frames in \((p["files"]?.array ?? []).compactMap(\.string).joined(separator: ", "))"
        }
        r.gaps = (proof["gaps"]?.array ?? []).map { g in
            "\(g["start"]?.string ?? "?") to \(g["end"]?.string ?? "?"): \(g["cause"]?.string ?? "")"
        }
        return names
    }

    /// `mjr decrypt`'s inputs: checked where they still are; a missing one is only said.
    func checkInputs(_ inputs: [JSONValue], into r: inout VerifyReport) {
        for f in inputs {
            guard let name = f["name"]?.string, let bytes = f["bytes"]?.int, let hash = f["sha256"]?.string else { continue }
            guard let d = try? FileDigest.of(URL(fileURLWithPath: name)) else {
                r.inputs.append("\(name): not found here, not checked (signed: \(bytes) bytes, sha256 \(hash))")
                continue
            }
            if d.size != bytes || d.sha256 != hash {
                r.problem("this input is not the one decrypted (\(d.size) bytes now, \(bytes) signed; or other bytes)", file: name)
            } else {
                r.inputs.append("\(name): \(bytes) bytes, as decrypted")
            }
        }
    }
}
