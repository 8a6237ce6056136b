import Foundation

extension Verifier {
    /// The manifest's signature, key, chain end and files. Returns the names of the files it
    /// signs, and whether its signature and key hold (what it says can be shown).
    func checkManifest(_ manifest: JSONValue, proof: JSONValue, chain: ChainCheck.Outcome, directory: URL, prefix: String,
                       into r: inout VerifyReport) -> (Set<String>, Bool) {
        let file = prefix + "manifest.json"
        guard let keyText = proof["public_key"]?.string, let der = Data(base64Encoded: keyText), let key = try? VerifyingKey(der: der) else {
            r.problem("proof.public_key is missing or not a P-256/Ed25519 public key", file: file)
            return ([], false)
        }
        let before = r.problemCount
        r.fingerprint = r.fingerprint ?? key.fingerprint
        r.algorithm = r.algorithm ?? proof["algorithm"]?.string
        if proof["fingerprint"]?.string != key.fingerprint { r.problem("proof.fingerprint is not the public key's", file: file) }
        if proof["algorithm"]?.string != key.algorithm { r.problem("proof.algorithm is not the public key's (\(key.algorithm))", file: file) }
        ChainCheck.expect(key, expected, what: "the manifest", into: &r)
        let signed = Canonical.bytes(manifest.removing("signature", at: ["proof"]))
        if let s = proof["signature"]?.string, let sig = Data(base64Encoded: s) {
            if !key.isValid(sig, for: signed) { r.problem("the signature does not match: the manifest was changed after it was signed, or signed by another key", file: file) }
        } else {
            r.problem("proof.signature is missing", file: file)
        }
        let valid = r.problemCount == before
        if valid { r.signedAt = proof["signed_at"]?.string }
        if let c = chain.lastValid, c.fingerprint != key.fingerprint { r.problem("the checkpoints were signed by another key (\(c.fingerprint))", file: prefix + ProofChain.fileName) }
        checkChainEnd(proof["chain"], chain: chain, prefix: prefix, into: &r)
        var names: Set<String> = []
        for f in proof["files"]?.array ?? [] {
            guard let name = f["name"]?.string, let bytes = f["bytes"]?.int, let hash = f["sha256"]?.string else {
                r.problem("an entry of proof.files lacks name, bytes or sha256", file: file)
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
        guard valid else { return (names, false) }
        r.participants += (proof["participants"]?.array ?? []).map { p in
            "\(p["display"]?.string ?? "?"): \(p["frames"]?.int ?? 0) frames in \((p["files"]?.array ?? []).compactMap(\.string).joined(separator: ", "))"
        }
        r.gaps += (proof["gaps"]?.array ?? []).map { g in
            "\(g["start"]?.string ?? "?") to \(g["end"]?.string ?? "?"): \(g["cause"]?.string ?? "")"
        }
        return (names, true)
    }

    /// The chain ends in the checkpoint the manifest names (found by its hash: after a takeover
    /// from another folder, line and number differ), and none follows it.
    func checkChainEnd(_ named: JSONValue?, chain: ChainCheck.Outcome, prefix: String, into r: inout VerifyReport) {
        let file = prefix + ProofChain.fileName
        guard let n = named?["checkpoints"]?.int, n > 0 else {
            if chain.count > 0 { r.problem("the manifest names no checkpoint, \(ProofChain.fileName) holds \(chain.count)", file: file) }
            return
        }
        let hash = named?["last"]?.string.flatMap(Digest.init(hex:))
        guard let at = chain.lines.firstIndex(where: { $0.hash == hash }) else {
            r.problem("the manifest names checkpoint \(n) as the last; no valid checkpoint of \(ProofChain.fileName) is that one (its chain ends at \(chain.lastValid?.number ?? 0))", file: file, checkpoint: n)
            return
        }
        if chain.lines[at].number != n { r.problem("checkpoint \(chain.lines[at].number) is the one the manifest names as checkpoint \(n)", file: file, checkpoint: n) }
        if chain.lines.count > at + 1 { r.problem("\(chain.lines.count - at - 1) checkpoint(s) after the last one the manifest names", file: file, checkpoint: n + 1) }
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
