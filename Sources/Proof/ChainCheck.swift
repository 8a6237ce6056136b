import Foundation
import Crypto

/// The checkpoint chain in `proof.jsonl`, read line by line: every line's signature, its
/// number (1, 2, …), the hash of the line before it, and the recording it names (the same on
/// every line); then, for a recording that was not finished, what the last valid checkpoint
/// proves of each file (`checkReach`). Only the unbroken prefix is kept, compactly.
struct ChainCheck {
    let directory: URL
    let expected: Verifier.Expected
    /// How problems name this folder's files: "" alone, "DIR/" among several folders.
    var prefix = ""
    /// More valid checkpoints than this (11.5 days at one per 5 s) are not kept: memory stays
    /// bounded (each kept line is about 180 bytes).
    static let maxCheckpoints = 200_000

    /// A checkpoint kept whole: the last valid one of a folder (its files and counters).
    struct Checkpoint {
        let number: Int
        let fingerprint: String
        let time: String?
        let final: Bool
        let object: JSONValue
    }

    /// One valid line of the file, as the stitching across folders needs it.
    struct Line {
        let hash: Digest
        let number: Int
        let time: String?
        /// Only on the file's first line and on a takeover (others link to the line before).
        let previous: Digest?
        /// It names a takeover: it links to another owner's checkpoint, maybe in another folder.
        let takeover: JSONValue?
        /// The recording is finished here (format 2): the signed manifest names this one.
        let final: Bool
    }

    struct Outcome {
        /// `proof.jsonl` is there (a regular file).
        var exists = false
        /// Lines in the file.
        var count = 0
        /// The unbroken, validly signed lines from the first.
        var lines: [Line] = []
        /// The last of them, whole.
        var lastValid: Checkpoint?
        /// The recording every line names (format 2), and the format of the first line.
        var identity: RecordingIdentity?
        var format = 0
        /// Serve instances that wrote checkpoints, in order.
        var instances: [String] = []
        /// Whether the file goes on after the last valid line.
        var brokenAt: Int?
    }

    /// Each line: parsed, signed by the file's key (another only from a takeover on), numbered
    /// one more than the line before, naming its hash and the first line's recording. A takeover
    /// line links to whatever checkpoint the earlier owner published (`ChainStitch` finds it).
    /// Once broken, later lines are only counted and parsed (no signature is checked).
    func run(into r: inout VerifyReport) -> Outcome {
        var o = Outcome()
        let file = prefix + ProofChain.fileName
        var reader: LineReader
        do { reader = try LineReader(directory.appendingPathComponent(ProofChain.fileName)) } catch {
            if error != .missing { r.problem("not a regular file that can be read (\(error)): replaced", file: file) }
            return o
        }
        o.exists = true
        var key: VerifyingKey?
        var broken = false
        var offset = 0
        var lastHash: Digest?
        var lastNumber = 0
        var instance: JSONValue?
        func breaks(_ text: String, _ n: Int) {
            r.problem(text, file: file, checkpoint: n)
            if !broken { o.brokenAt = n }
            broken = true
        }
        while let item = reader.next() {
            o.count += 1
            let i = o.count - 1
            var n = i + 1 + offset
            guard case .line(let bytes, let terminated) = item else {
                if case .tooLong(let length) = item { breaks("line \(o.count) is \(length) bytes long, more than a checkpoint can be (\(LineReader.maxLine)): not one", n) }
                continue
            }
            if !terminated { breaks("the last line is not complete (no line end)", n) }
            let hash = Digest(sha256Of: bytes)
            defer { lastHash = hash }
            guard let v = try? JSONValue.parse(Data(bytes)), let der = v["public_key"]?.string.flatMap({ Data(base64Encoded: $0) }),
                  let k = try? VerifyingKey(der: der) else {
                breaks("line \(o.count) is not a checkpoint (JSON with a public key)", n)
                continue
            }
            guard !broken else { continue }
            let number = v["checkpoint"]?.int ?? 0
            let takeover = v["takeover"].flatMap { $0 == .null ? nil : $0 }
            // Problems are named by the number the line's place gives it (a file that begins
            // with a takeover begins at that takeover's number).
            if i == 0, takeover != nil { offset = number - 1 }
            n = i + 1 + offset
            if key == nil || (takeover != nil && k != key) {
                // A takeover may be signed by the next owner's own key.
                if key == nil { r.fingerprint = r.fingerprint ?? k.fingerprint; r.algorithm = r.algorithm ?? k.algorithm }
                if !r.signers.contains(k.fingerprint) { r.signers.append(k.fingerprint) }
                key = k
                ChainCheck.expect(k, expected, what: "the checkpoints", into: &r)
            } else if k != key {
                breaks("signed by another key (\(k.fingerprint))", n)
            }
            if v["fingerprint"]?.string != k.fingerprint { breaks("fingerprint is not its public key's", n) }
            if let problem = checkIdentity(v, line: i, takeover: takeover != nil, instance: &instance, into: &o) { breaks(problem, n) }
            if takeover == nil {
                let expectedNumber = i == 0 ? 1 : lastNumber + 1
                if number != expectedNumber { breaks("numbered \(number) on line \(i + 1): a checkpoint is missing or out of order", n) }
                let previous = i == 0 ? JSONValue.null : lastHash.map { .string($0.hex) } ?? .null
                if v["previous"] != previous { breaks("its previous hash is not that of the line before: a checkpoint was removed, changed or inserted", n) }
            }
            guard let s = v["signature"]?.string, let sig = Data(base64Encoded: s),
                  k.isValid(sig, for: Canonical.bytes(v.removing("signature"))) else {
                breaks("the signature does not match (the checkpoint was changed)", n)
                continue
            }
            guard !broken else { continue }
            guard o.lines.count < Self.maxCheckpoints else {
                breaks("more than \(Self.maxCheckpoints) checkpoints: more than verify keeps", n)
                continue
            }
            let final = v["final"] == JSONValue.bool(true)
            o.lines.append(Line(hash: hash, number: number, time: v["time"]?.string,
                                previous: i == 0 || takeover != nil ? v["previous"]?.string.flatMap(Digest.init(hex:)) : nil,
                                takeover: takeover, final: final))
            lastNumber = number
            o.lastValid = Checkpoint(number: number, fingerprint: k.fingerprint, time: v["time"]?.string, final: final, object: v)
            r.lastCheckpointTime = v["time"]?.string
        }
        r.checkpoints = max(r.checkpoints, o.lastValid?.number ?? 0)
        return o
    }

    /// Format 2: every line names the first line's recording; its writer (`instance`) changes
    /// only on a takeover. Format 1 (older recordings) names none; the two are not mixed.
    func checkIdentity(_ v: JSONValue, line i: Int, takeover: Bool, instance: inout JSONValue?, into o: inout Outcome) -> String? {
        let format = v["format"]?.int ?? (v["format"] == nil ? 1 : 0)
        if i == 0 { o.format = format }
        guard format == o.format else { return "format \(format) after format \(o.format): lines of two recorders' versions" }
        switch format {
        case 1:
            return v["recording"] == nil ? nil : "a format 1 checkpoint names a recording"
        case RecordingIdentity.format:
            guard let identity = RecordingIdentity(json: v["recording"]) else { return "its recording (id, room, Janus, start, job) is missing or malformed" }
            if i == 0 { o.identity = identity }
            if identity != o.identity { return "it names another recording (\(identity.summary)) than the first checkpoint (\(o.identity?.summary ?? "?")): lines of two recordings" }
            let writer = v["instance"] ?? .null
            if let instance, writer != instance, !takeover { return "written by another serve instance than the line before, without a takeover" }
            instance = writer
            if let name = writer.string, !o.instances.contains(name) { o.instances.append(name) }
            return nil
        default:
            return "format \(format) is not one this verify reads (1 or \(RecordingIdentity.format)): a newer sfubot wrote it, or it was changed"
        }
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

/// A SHA-256 kept in 32 bytes (not 64 hex characters on the heap): verify keeps one per line.
struct Digest: Hashable, Sendable {
    let a, b, c, d: UInt64

    /// The first 32 bytes, big-endian words (raw loads: this runs for every line of a file).
    init(_ raw: UnsafeRawBufferPointer) {
        func word(_ at: Int) -> UInt64 { UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        (a, b, c, d) = (word(0), word(8), word(16), word(24))
    }

    init(sha256Of bytes: [UInt8]) {
        self = SHA256.hash(data: bytes).withUnsafeBytes { Digest($0) }
    }

    init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: utf8[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        self = bytes.withUnsafeBytes { Digest($0) }
        guard self.hex == hex else { return nil }
    }

    var hex: String {
        Hex.string([a, b, c, d].flatMap { w in (0..<8).reversed().map { UInt8(truncatingIfNeeded: w >> (8 * $0)) } })
    }
}
