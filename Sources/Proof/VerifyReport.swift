import Foundation

/// What `sfubot verify` found: each problem named (file, checkpoint), and a summary of what
/// the signatures cover.
public struct VerifyReport: Sendable {
    public struct Problem: Sendable, CustomStringConvertible {
        public var file: String?
        public var checkpoint: Int?
        public var offset: Int?
        public var text: String
        public var description: String {
            var where_: [String] = []
            if let file { where_.append(file) }
            if let checkpoint { where_.append("checkpoint \(checkpoint)") }
            if let offset { where_.append("offset \(offset)") }
            return (where_.isEmpty ? "" : where_.joined(separator: ", ") + ": ") + text
        }
    }

    /// One file as the last valid checkpoint proves it (a recording that was not finished).
    public struct Reach: Sendable {
        public var file: String
        public var proven: Int
        public var size: Int
    }

    public var problems: [Problem] = []
    public var fingerprint: String?
    public var algorithm: String?
    public var signedAt: String?
    public var started: String?
    public var ended: String?
    /// "manifest" (a finished recording's signed manifest), "checkpoints" (only the chain) or "none".
    public var coveredBy = "none"
    public var checkpoints = 0
    public var lastCheckpointTime: String?
    public var participants: [String] = []
    public var gaps: [String] = []
    public var files: [String] = []
    public var reach: [Reach] = []
    public var extraFiles: [String] = []
    /// The folders checked as one chain (several: one per owner of a recording taken over).
    public var folders: [String] = []
    /// Every takeover on the chain: who, after which checkpoint, the gap.
    public var failovers: [String] = []
    /// Every key that signed checkpoints (another only from a takeover on).
    public var signers: [String] = []
    /// `mjr decrypt`'s signed inputs, and whether each was checked.
    public var inputs: [String] = []

    public var ok: Bool { problems.isEmpty && coveredBy != "none" }

    mutating func problem(_ text: String, file: String? = nil, checkpoint: Int? = nil, offset: Int? = nil) {
        problems.append(Problem(file: file, checkpoint: checkpoint, offset: offset, text: text))
    }

    public var text: String {
        var lines: [String] = []
        lines.append(ok ? "OK: every signature, the chain and every file hold" : "FAILED: \(problems.count) problem(s)")
        for p in problems { lines.append("  problem: \(p)") }
        if let fingerprint { lines.append("signed by: \(algorithm ?? "?") key, fingerprint \(fingerprint)") }
        lines.append("covered by: \(coveredBy == "manifest" ? "the signed final manifest" : coveredBy == "checkpoints" ? "the checkpoints only (the recording was not finished)" : "nothing signed")")
        if let signedAt { lines.append("signed at: \(signedAt)") }
        if let started { lines.append("recording: \(started) to \(ended ?? lastCheckpointTime.map { "\($0) (last checkpoint)" } ?? "?")") }
        if folders.count > 1 { lines.append("folders: \(folders.joined(separator: ", ")), one chain") }
        if signers.count > 1 { lines.append("checkpoint signers: \(signers.joined(separator: ", "))") }
        lines.append("checkpoints: \(checkpoints)\(lastCheckpointTime.map { ", the last at \($0)" } ?? "")")
        for f in files { lines.append("file: \(f)") }
        for r in reach { lines.append("proven: \(r.file) bytes 0..<\(r.proven) of \(r.size)") }
        for p in participants { lines.append("participant: \(p)") }
        for g in gaps { lines.append("gap: \(g)") }
        for f in failovers { lines.append("failover: \(f)") }
        for i in inputs { lines.append("input: \(i)") }
        for e in extraFiles { lines.append("extra (not signed): \(e)") }
        return lines.joined(separator: "\n")
    }

    public var json: JSONValue {
        func strings(_ a: [String]) -> JSONValue { .array(a.map { .string($0) }) }
        func opt(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
        return .object([
            "ok": .bool(ok), "covered_by": .string(coveredBy), "fingerprint": opt(fingerprint), "algorithm": opt(algorithm),
            "signed_at": opt(signedAt), "started": opt(started), "ended": opt(ended), "checkpoints": .number(Double(checkpoints)),
            "last_checkpoint_time": opt(lastCheckpointTime), "participants": strings(participants), "gaps": strings(gaps),
            "files": strings(files), "extra_files": strings(extraFiles), "inputs": strings(inputs),
            "folders": strings(folders), "failovers": strings(failovers), "signers": strings(signers),
            "reach": .array(reach.map { .object(["file": .string($0.file), "proven": .number(Double($0.proven)), "size": .number(Double($0.size))]) }),
            "problems": .array(problems.map { p in
                .object([
                    "file": opt(p.file), "checkpoint": p.checkpoint.map { .number(Double($0)) } ?? .null,
                    "offset": p.offset.map { .number(Double($0)) } ?? .null, "problem": .string(p.text),
                ])
            }),
        ])
    }
}
