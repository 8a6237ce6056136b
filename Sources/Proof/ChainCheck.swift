import Foundation

/// The checkpoint chain in `proof.jsonl`: every line's signature, its number (1, 2, …) and the
/// hash of the line before it; then, for a recording that was not finished, what the last valid
/// checkpoint proves of each file (`checkReach`).
struct ChainCheck {
    let directory: URL
    let expected: Verifier.Expected
    /// How problems name this folder's files: "" alone, "DIR/" among several folders.
    var prefix = ""

    struct Checkpoint {
        let number: Int
        let fingerprint: String
        let time: String?
        let object: JSONValue
    }

    /// One line of the file, as found.
    struct Line {
        let hash: String
        var checkpoint: Checkpoint?
        var previous: String?
        /// It names a takeover: it links to another owner's checkpoint, maybe in another folder.
        var takeover: JSONValue?
        /// Its signature holds and it is where it belongs in this file.
        var valid = false
    }

    struct Outcome {
        /// Lines in the file, and each line's SHA-256 (of its bytes without the line end).
        var count = 0
        var hashes: [String] = []
        var lines: [Line] = []
        var first: Checkpoint?
        /// The last checkpoint of the unbroken, validly signed chain from the first.
        var lastValid: Checkpoint?
    }

    /// Each line: parsed, signed by the file's key (another only from a takeover on), numbered
    /// one more than the line before and naming its hash. A takeover line links to whatever
    /// checkpoint the earlier owner published (`ChainStitch` finds it, in any folder).
    func run(into r: inout VerifyReport) -> Outcome {
        var o = Outcome()
        let file = prefix + ProofChain.fileName
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(ProofChain.fileName).path) else { return o }
        var lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() } else if !lines.isEmpty {
            r.problem("the last line is not complete (no line end)", file: file, checkpoint: lines.count)
        }
        var key: VerifyingKey?
        var broken = false
        var offset = 0
        for (i, bytes) in lines.enumerated() {
            let hash = Hex.sha256(Data(bytes))
            o.hashes.append(hash)
            o.count = i + 1
            var line = Line(hash: hash)
            defer { o.lines.append(line) }
            guard let v = try? JSONValue.parse(Data(bytes)), let der = v["public_key"]?.string.flatMap({ Data(base64Encoded: $0) }),
                  let k = try? VerifyingKey(der: der) else {
                r.problem("line \(i + 1) is not a checkpoint (JSON with a public key)", file: file, checkpoint: i + 1)
                broken = true
                continue
            }
            let cp = Checkpoint(number: v["checkpoint"]?.int ?? 0, fingerprint: k.fingerprint, time: v["time"]?.string, object: v)
            line.checkpoint = cp
            line.previous = v["previous"]?.string
            line.takeover = v["takeover"].flatMap { $0 == .null ? nil : $0 }
            // Problems are named by the number the line's place gives it (a file that begins
            // with a takeover begins at that takeover's number).
            if i == 0, line.takeover != nil { offset = cp.number - 1 }
            let n = i + 1 + offset
            let before = o.lines.last?.checkpoint
            if o.first == nil { o.first = cp }
            if key == nil || (line.takeover != nil && k != key) {
                // A takeover may be signed by the next owner's own key.
                if key == nil { r.fingerprint = r.fingerprint ?? k.fingerprint; r.algorithm = r.algorithm ?? k.algorithm }
                if !r.signers.contains(k.fingerprint) { r.signers.append(k.fingerprint) }
                key = k
                ChainCheck.expect(k, expected, what: "the checkpoints", into: &r)
            } else if k != key {
                r.problem("signed by another key (\(k.fingerprint))", file: file, checkpoint: n)
                broken = true
            }
            if v["fingerprint"]?.string != k.fingerprint { r.problem("fingerprint is not its public key's", file: file, checkpoint: n); broken = true }
            if line.takeover == nil {
                let expectedNumber = i == 0 ? 1 : (before?.number ?? n - 1) + 1
                if cp.number != expectedNumber { r.problem("numbered \(cp.number) on line \(i + 1): a checkpoint is missing or out of order", file: file, checkpoint: n); broken = true }
                let previous = i == 0 ? JSONValue.null : .string(o.hashes[i - 1])
                if v["previous"] != previous {
                    r.problem("its previous hash is not that of the line before: a checkpoint was removed, changed or inserted", file: file, checkpoint: n)
                    broken = true
                }
            }
            guard let s = v["signature"]?.string, let sig = Data(base64Encoded: s),
                  k.isValid(sig, for: Canonical.bytes(v.removing("signature"))) else {
                r.problem("the signature does not match (the checkpoint was changed)", file: file, checkpoint: n)
                broken = true
                continue
            }
            line.valid = !broken
            if !broken {
                o.lastValid = cp
                r.lastCheckpointTime = cp.time
            }
        }
        r.checkpoints = max(r.checkpoints, o.lastValid?.number ?? o.count)
        return o
    }

    static func expect(_ key: VerifyingKey, _ expected: Verifier.Expected, what: String, into r: inout VerifyReport) {
        switch expected {
        case .any: break
        case .fingerprint(let f) where f.lowercased() != key.fingerprint:
            r.problem("\(what) were signed by the key \(key.fingerprint), not the expected \(f.lowercased())")
        case .key(let k) where k != key:
            r.problem("\(what) were signed by the key \(key.fingerprint), not the expected \(k.fingerprint)")
        default: break
        }
    }

    /// Every file of `last`: present, at least as long as covered, and its covered bytes hash
    /// as signed. Returns the names.
    static func checkReach(_ last: Checkpoint, directory: URL, prefix: String = "", into r: inout VerifyReport) -> Set<String> {
        var names: Set<String> = []
        for f in last.object["files"]?.array ?? [] {
            guard let name = f["name"]?.string, let covered = f["covered"]?.int, let hash = f["sha256"]?.string else { continue }
            names.insert(name)
            let shown = name.hasPrefix("/") ? name : prefix + name
            let url = name.hasPrefix("/") ? URL(fileURLWithPath: name) : directory.appendingPathComponent(name)
            do {
                let d = try FileDigest.of(url, limit: covered)
                if d.hashed < covered {
                    r.problem("\(d.size) bytes, shorter than the \(covered) checkpoint \(last.number) covers", file: shown, checkpoint: last.number, offset: d.size)
                } else if d.sha256 != hash {
                    r.problem("its first \(covered) bytes differ from what checkpoint \(last.number) signed", file: shown, checkpoint: last.number)
                } else {
                    r.reach.append(.init(file: shown, proven: covered, size: d.size))
                }
            } catch .missing {
                r.problem("missing (checkpoint \(last.number) covers \(covered) bytes of it)", file: shown, checkpoint: last.number)
            } catch {
                r.problem("cannot be read: \(error)", file: shown, checkpoint: last.number)
            }
        }
        if let counters = last.object["counters"]?["feeds"]?.array {
            r.participants += counters.map { c in "\(c["display"]?.string ?? "?") \(c["kind"]?.string ?? ""): \(c["frames"]?.int ?? 0) frames in \(c["file"]?.string ?? "?") (at checkpoint \(last.number))" }
        }
        return names
    }
}
