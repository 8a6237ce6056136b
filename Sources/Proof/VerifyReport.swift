import Foundation

/// What `sfubot verify` found: its verdict (and exit code), each problem named (file,
/// checkpoint; the first `shownProblems`, then a count), and a summary of what the signatures
/// cover. Everything it shows under a verdict other than `failed` comes from signed data.
public struct VerifyReport: Sendable {
    /// What an auditor's script gets (docs/proof.md, exit codes).
    public enum Verdict: String, Sendable {
        /// 0: a finished recording: its signed final manifest holds, and every byte is proven.
        case finished
        /// 75 (EX_TEMPFAIL): what is there is as signed, but not every byte is proven: the
        /// recorder was killed (proven up to its last checkpoint), or an earlier owner's folder
        /// goes on past its last checkpoint.
        case unfinished
        /// 65 (EX_DATAERR): something does not hold (tampering, a file nothing signed, …).
        case failed

        public var exitCode: Int32 {
            switch self {
            case .finished: 0
            case .unfinished: 75
            case .failed: 65
            }
        }
    }

    /// Problems printed (and in `--json`); the rest are counted.
    public static let shownProblems = 20

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

    /// The first `shownProblems` problems; `problemCount` counts them all.
    public var problems: [Problem] = []
    public var problemCount = 0
    public var verdict = Verdict.failed
    /// The recording the checkpoints name (format 2), from signed data only.
    public var identity: RecordingIdentity?
    /// The proof's format: 1 (checkpoints name no recording), 2; 0 if there is no chain.
    public var format = 0
    /// Serve instances that wrote checkpoints, in order.
    public var instances: [String] = []
    /// Bytes on disk in signed files past what is proven (a killed recorder's tail).
    public var unproven = 0
    /// Files in the folder nothing signed but the recorder's own, expected (not read).
    public var unsigned: [String] = []
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

    /// Exit 0: finished, and every byte proven.
    public var ok: Bool { verdict == .finished }

    mutating func problem(_ text: String, file: String? = nil, checkpoint: Int? = nil, offset: Int? = nil) {
        problemCount += 1
        if problems.count < Self.shownProblems { problems.append(Problem(file: file, checkpoint: checkpoint, offset: offset, text: text)) }
    }

    var headline: String {
        switch verdict {
        case .finished: return "OK: finished; every signature, the chain and every byte hold"
        case .failed: return "FAILED: \(problemCount) problem(s)"
        case .unfinished:
            let upTo = "proven up to checkpoint \(checkpoints)\(lastCheckpointTime.map { " of \($0)" } ?? "")"
            let total = reach.reduce(0) { $0 + $1.size }
            let finishedNote = coveredBy == "manifest" ? "finished, but an earlier owner's folder goes on past its last checkpoint; " : ""
            return "UNFINISHED (not every byte is proven): \(finishedNote)\(upTo); \(unproven) of \(total) bytes unproven"
        }
    }

    public var text: String {
        var lines: [String] = []
        lines.append(headline)
        for p in problems { lines.append("  problem: \(p)") }
        if problemCount > problems.count { lines.append("  … and \(problemCount - problems.count) more problem(s)") }
        if let identity { lines.append("recording (signed): \(identity.summary)") } else if format == 1 {
            lines.append("recording: not named by the checkpoints (format 1, an older recorder): only a signed manifest names it")
        }
        if !instances.isEmpty { lines.append("written by serve instance(s): \(instances.joined(separator: ", "))") }
        if let fingerprint { lines.append("signed by: \(algorithm ?? "?") key, fingerprint \(fingerprint)") }
        lines.append("covered by: \(coveredBy == "manifest" ? "the signed final manifest" : coveredBy == "checkpoints" ? "the checkpoints only (the recording was not finished)" : "nothing signed")")
        if let signedAt { lines.append("signed at: \(signedAt)") }
        if let started { lines.append("recorded: \(started) to \(ended ?? lastCheckpointTime.map { "\($0) (last checkpoint)" } ?? "?")") }
        if folders.count > 1 { lines.append("folders: \(folders.joined(separator: ", ")), one chain") }
        if signers.count > 1 { lines.append("checkpoint signers: \(signers.joined(separator: ", "))") }
        lines.append("checkpoints: \(checkpoints)\(lastCheckpointTime.map { ", the last at \($0)" } ?? "")")
        for f in files { lines.append("file: \(f)") }
        for r in reach { lines.append("proven: \(r.file) bytes 0..<\(r.proven) of \(r.size)") }
        for p in participants { lines.append("participant: \(p)") }
        for g in gaps { lines.append("gap: \(g)") }
        for f in failovers { lines.append("failover: \(f)") }
        for i in inputs { lines.append("input: \(i)") }
        for u in unsigned { lines.append("unsigned, expected (not read): \(u)") }
        for e in extraFiles { lines.append("extra (not signed): \(e)") }
        return lines.joined(separator: "\n")
    }

    public var json: JSONValue {
        func strings(_ a: [String]) -> JSONValue { .array(a.map { .string($0) }) }
        func opt(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
        return .object([
            "ok": .bool(ok), "verdict": .string(verdict.rawValue), "exit": .number(Double(verdict.exitCode)),
            "problem_count": .number(Double(problemCount)), "recording": identity?.json ?? .null, "format": .number(Double(format)),
            "instances": strings(instances), "unproven_bytes": .number(Double(unproven)), "unsigned_files": strings(unsigned),
            "covered_by": .string(coveredBy), "fingerprint": opt(fingerprint), "algorithm": opt(algorithm),
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
