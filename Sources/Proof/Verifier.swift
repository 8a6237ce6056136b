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

    /// The recording's folders: one, or one per owner (a serve failover), checked as one chain.
    public let directories: [URL]
    public let expected: Expected
    /// Extensions of media files: any such file in the folder that nothing signed names is reported.
    static let mediaExtensions: Set<String> = ["mkv", "mka", "opus", "ogg", "webm", "mp4", "mjr"]

    public init(directory: URL, expected: Expected = .any) {
        self.init(directories: [directory], expected: expected)
    }

    /// `directories`: every owner's folder; one folder holding no recording but subfolders that
    /// do stands for those.
    public init(directories: [URL], expected: Expected = .any) {
        self.directories = directories
        self.expected = expected
    }

    /// A folder holds a recording if it has a manifest or checkpoints.
    static func holdsRecording(_ dir: URL) -> Bool {
        ["manifest.json", ProofChain.fileName].contains { FileManager.default.fileExists(atPath: dir.appendingPathComponent($0).path) }
    }

    var folders: [URL] {
        guard directories.count == 1, let dir = directories.first, !Self.holdsRecording(dir) else { return directories }
        let inside = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
            .map { dir.appendingPathComponent($0) }.filter(Self.holdsRecording)
        return inside.isEmpty ? directories : inside
    }

    public func run() -> VerifyReport {
        var r = VerifyReport()
        let folders = self.folders
        let names = folders.map(\.lastPathComponent)
        let labels = Set(names).count == names.count ? names : folders.map(\.path)
        var outcomes: [(label: String, outcome: ChainCheck.Outcome)] = []
        var covered: [String] = []
        for (dir, label) in zip(folders, labels) {
            let (outcome, by) = checkFolder(dir, prefix: folders.count > 1 ? label + "/" : "", into: &r)
            outcomes.append((label, outcome))
            covered.append(by)
        }
        let end = ChainStitch.run(outcomes, into: &r)
        if folders.count > 1 {
            r.folders = labels
            r.checkpoints = end?.number ?? 0
            r.lastCheckpointTime = end?.time
            r.coveredBy = covered.allSatisfy { $0 == "none" } ? "none" : end.map { covered[$0.folder] == "manifest" ? "manifest" : "checkpoints" } ?? "checkpoints"
        } else {
            r.coveredBy = covered.first ?? "none"
        }
        return r
    }

    /// One folder: its manifest (if signed) or its last valid checkpoint, and its extra media
    /// files. Returns its chain and what covers it ("manifest", "checkpoints" or "none").
    func checkFolder(_ directory: URL, prefix: String, into r: inout VerifyReport) -> (ChainCheck.Outcome, String) {
        let manifestURL = directory.appendingPathComponent("manifest.json")
        var manifest: JSONValue?
        if let data = FileManager.default.contents(atPath: manifestURL.path) {
            do { manifest = try JSONValue.parse(data) } catch { r.problem("\(error)", file: prefix + "manifest.json") }
        }
        if let started = manifest?["started"]?.string, r.started.map({ started < $0 }) ?? true { r.started = started }
        if let ended = manifest?["ended"]?.string, r.ended.map({ ended > $0 }) ?? true { r.ended = ended }
        let chain = ChainCheck(directory: directory, expected: expected, prefix: prefix).run(into: &r)
        var listed: Set<String> = []
        var coveredBy = "none"
        if let manifest, let proof = manifest["proof"] {
            coveredBy = "manifest"
            listed = checkManifest(manifest, proof: proof, chain: chain, directory: directory, prefix: prefix, into: &r)
        } else if manifest?["ended"].map({ $0 != .null }) == true {
            r.problem("the recording was finished but manifest.json carries no signed proof", file: prefix + "manifest.json")
        }
        if coveredBy != "manifest", let last = chain.lastValid {
            coveredBy = "checkpoints"
            listed = ChainCheck.checkReach(last, directory: directory, prefix: prefix, into: &r)
        }
        if coveredBy == "none", r.problems.isEmpty { r.problem("nothing in \(directory.path) is signed (no proof in manifest.json, no \(ProofChain.fileName))") }
        for name in ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
        where !name.hasPrefix(".") && Self.mediaExtensions.contains((name as NSString).pathExtension.lowercased()) && !listed.contains(name) {
            r.extraFiles.append(prefix + name)
        }
        return (chain, coveredBy)
    }

    /// The manifest's signature, key and files; returns the names of the files it signs.
    func checkManifest(_ manifest: JSONValue, proof: JSONValue, chain: ChainCheck.Outcome, directory: URL, prefix: String, into r: inout VerifyReport) -> Set<String> {
        r.signedAt = proof["signed_at"]?.string
        r.algorithm = proof["algorithm"]?.string
        guard let keyText = proof["public_key"]?.string, let der = Data(base64Encoded: keyText), let key = try? VerifyingKey(der: der) else {
            r.problem("proof.public_key is missing or not a P-256/Ed25519 public key", file: prefix + "manifest.json")
            return []
        }
        r.fingerprint = key.fingerprint
        if proof["fingerprint"]?.string != key.fingerprint { r.problem("proof.fingerprint is not the public key's", file: prefix + "manifest.json") }
        if proof["algorithm"]?.string != key.algorithm { r.problem("proof.algorithm is not the public key's (\(key.algorithm))", file: prefix + "manifest.json") }
        ChainCheck.expect(key, expected, what: "the manifest", into: &r)
        let signed = Canonical.bytes(manifest.removing("signature", at: ["proof"]))
        if let s = proof["signature"]?.string, let sig = Data(base64Encoded: s) {
            if !key.isValid(sig, for: signed) { r.problem("the signature does not match: the manifest was changed after it was signed, or signed by another key", file: prefix + "manifest.json") }
        } else {
            r.problem("proof.signature is missing", file: prefix + "manifest.json")
        }
        if let c = chain.lines.last?.checkpoint, c.fingerprint != key.fingerprint { r.problem("the checkpoints were signed by another key (\(c.fingerprint))", file: prefix + ProofChain.fileName) }
        // The chain ends in the checkpoint the manifest names.
        let named = proof["chain"]
        if let n = named?["checkpoints"]?.int, n > 0 {
            // Found by its hash: after a takeover from another folder, line and number differ.
            let at = chain.hashes.firstIndex { $0 == named?["last"]?.string }
            let numbers = chain.lines.compactMap { $0.checkpoint?.number }
            if at == nil, !numbers.contains(where: { $0 >= n }) {
                r.problem("the manifest names \(n) checkpoints, \(ProofChain.fileName) holds \(numbers.max() ?? 0)", file: prefix + ProofChain.fileName)
            } else if let at, chain.lines[at].checkpoint?.number == n {
                if chain.count > at + 1 { r.problem("\(chain.count - at - 1) checkpoint(s) after the last one the manifest names", file: prefix + ProofChain.fileName, checkpoint: n + 1) }
            } else {
                r.problem("checkpoint \(n) is not the one the manifest names as the last", file: prefix + ProofChain.fileName, checkpoint: n)
            }
        } else if chain.count > 0 {
            r.problem("the manifest names no checkpoint, \(ProofChain.fileName) holds \(chain.count)", file: prefix + ProofChain.fileName)
        }
        var names: Set<String> = []
        for f in proof["files"]?.array ?? [] {
            guard let name = f["name"]?.string, let bytes = f["bytes"]?.int, let hash = f["sha256"]?.string else {
                r.problem("an entry of proof.files lacks name, bytes or sha256", file: prefix + "manifest.json")
                continue
            }
            names.insert(name)
            let shown = name.hasPrefix("/") ? name : prefix + name
            r.files.append("\(shown) \(bytes) bytes sha256 \(hash)")
            let url = name.hasPrefix("/") ? URL(fileURLWithPath: name) : directory.appendingPathComponent(name)
            do {
                let d = try FileDigest.of(url)
                if d.size > bytes {
                    r.problem("\(d.size - bytes) byte(s) appended after the signed \(bytes)", file: shown, offset: bytes)
                } else if d.size < bytes {
                    r.problem("\(bytes - d.size) byte(s) missing: \(d.size) of the signed \(bytes)", file: shown, offset: d.size)
                } else if d.sha256 != hash {
                    r.problem("the contents differ from the signed SHA-256 (same size: bytes were changed or the file was replaced)", file: shown)
                }
            } catch .missing {
                r.problem("missing (signed: \(bytes) bytes)", file: shown)
            } catch {
                r.problem("cannot be read: \(error)", file: shown)
            }
        }
        // Every file the manifest lists is signed.
        let listed = (manifest["feeds"]?.array ?? []).compactMap { $0["file"]?.string } + [manifest["mix"]?.string].compactMap { $0 }
            + (manifest["outputs"]?.array ?? []).compactMap { $0["file"]?.string }
        // The mix is listed by its path; the proof names it relative to the folder when inside it.
        for name in Set(listed).sorted() where !names.contains(name) && !(name.hasPrefix("/") && names.contains((name as NSString).lastPathComponent)) {
            r.problem("listed in the manifest but not signed", file: prefix + name)
        }
        checkInputs(proof["inputs"]?.array ?? [], into: &r)
        r.participants += (proof["participants"]?.array ?? []).map { p in
            "\(p["display"]?.string ?? "?"): \(p["frames"]?.int ?? 0) frames in \((p["files"]?.array ?? []).compactMap(\.string).joined(separator: ", "))"
        }
        r.gaps += (proof["gaps"]?.array ?? []).map { g in
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
