public import Foundation

/// `sfubot verify`: checks a recording folder's signed manifest (`proof` in manifest.json),
/// its checkpoint chain (`proof.jsonl`), every file they name, and that the folder holds
/// nothing else. Synchronous and blocking: run it from a command, not on the cooperative pool.
/// Its verdict (docs/proof.md): finished (every byte proven), unfinished (proven up to a
/// checkpoint), or failed.
public struct Verifier {
    public enum Expected: Sendable {
        case any
        case fingerprint(String)
        case key(VerifyingKey)
    }

    /// The recording's folders: one, or one per owner (a serve failover), checked as one chain.
    public let directories: [URL]
    public let expected: Expected
    /// Files nothing signed are listed, not failed (`--allow-extra`: a folder that holds more by design).
    public let allowExtra: Bool

    public init(directory: URL, expected: Expected = .any, allowExtra: Bool = false) {
        self.init(directories: [directory], expected: expected, allowExtra: allowExtra)
    }

    /// `directories`: every owner's folder; one folder holding no recording but subfolders that
    /// do stands for those.
    public init(directories: [URL], expected: Expected = .any, allowExtra: Bool = false) {
        self.directories = directories
        self.expected = expected
        self.allowExtra = allowExtra
    }

    /// A folder holds a recording if it has a manifest or checkpoints.
    static func holdsRecording(_ dir: URL) -> Bool {
        ["manifest.json", ProofChain.fileName].contains { FileManager.default.fileExists(atPath: dir.appendingPathComponent($0).path) }
    }

    var folders: [URL] {
        var seen = Set<String>()
        let given = directories.map(\.standardizedFileURL).filter { seen.insert($0.path).inserted }
        guard given.count == 1, let dir = given.first, !Self.holdsRecording(dir) else { return given }
        let inside = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
            .map { dir.appendingPathComponent($0) }.filter(Self.holdsRecording)
        return inside.isEmpty ? given : inside
    }

    /// What one folder holds, as checked.
    struct Folder {
        var chain = ChainCheck.Outcome()
        /// "manifest" (a signed manifest), "checkpoints" (only the chain) or "none".
        var coveredBy = "none"
        /// The manifest's signature and key hold.
        var signedManifest = false
        /// manifest.json is there, a JSON object without `proof` (the recorder's live manifest).
        var liveManifest = false
        /// Names (relative to the folder, or absolute) the signatures cover.
        var signed: Set<String> = []
        var started: String?
        var ended: String?
    }

    public func run() -> VerifyReport {
        var r = VerifyReport()
        let folders = self.folders
        let names = folders.map(\.lastPathComponent)
        let labels = Set(names).count == names.count ? names : folders.map(\.path)
        var checked: [Folder] = []
        for (dir, label) in zip(folders, labels) {
            checked.append(checkFolder(dir, prefix: folders.count > 1 ? label + "/" : "", into: &r))
        }
        let end = ChainStitch.run(zip(labels, checked).map { ($0, $1.chain) }, into: &r)
        sameRecording(zip(labels, checked).map { ($0, $1.chain) }, into: &r)
        if folders.count > 1 {
            r.folders = labels
            r.checkpoints = end?.number ?? 0
            r.lastCheckpointTime = end?.time
        }
        for (k, dir) in folders.enumerated() {
            checkFiles(dir, folder: checked[k], prefix: folders.count > 1 ? labels[k] + "/" : "", nested: Set(folders.map(\.path)), into: &r)
        }
        // The folder the chain ends in (the only one without a chain: an `mjr decrypt` folder).
        let last = end.map { checked[$0.folder] } ?? (checked.count == 1 ? checked.first : nil)
        r.coveredBy = checked.allSatisfy { $0.coveredBy == "none" } ? "none" : last?.coveredBy ?? "checkpoints"
        if r.coveredBy == "none", r.problemCount == 0 {
            r.problem("nothing in \(folders.map(\.path).joined(separator: ", ")) is signed (no proof in manifest.json, no \(ProofChain.fileName))")
        }
        r.started = r.identity?.started ?? last.flatMap { $0.signedManifest ? $0.started : nil }
        r.ended = last.flatMap { $0.signedManifest ? $0.ended : nil }
        if r.problemCount > 0 {
            r.verdict = .failed
        } else {
            r.verdict = last?.signedManifest == true && r.unproven == 0 ? .finished : .unfinished
        }
        return r
    }

    /// One folder: its manifest (if signed) or its last valid checkpoint.
    func checkFolder(_ directory: URL, prefix: String, into r: inout VerifyReport) -> Folder {
        var folder = Folder()
        let read = readManifest(directory, prefix: prefix, into: &r)
        let manifest = read == .null ? nil : read
        folder.chain = ChainCheck(directory: directory, expected: expected, prefix: prefix).run(into: &r)
        if r.format == 0 { r.format = folder.chain.format }
        if r.identity == nil { r.identity = folder.chain.identity }
        for i in folder.chain.instances where !r.instances.contains(i) { r.instances.append(i) }
        if folder.chain.exists { folder.signed.insert(ProofChain.fileName) }
        if let manifest, let proof = manifest["proof"] {
            folder.coveredBy = "manifest"
            let (names, valid) = checkManifest(manifest, proof: proof, chain: folder.chain, directory: directory, prefix: prefix, into: &r)
            folder.signed.formUnion(names)
            folder.signedManifest = valid
            if valid { folder.signed.insert("manifest.json") }
            (folder.started, folder.ended) = (manifest["started"]?.string, manifest["ended"]?.string)
        } else if let manifest {
            folder.liveManifest = true
            if manifest["ended"].map({ $0 != .null }) == true {
                r.problem("the recording was finished but manifest.json carries no signed proof", file: prefix + "manifest.json")
            }
        }
        if let identity = folder.chain.identity, let manifest { compare(manifest, with: identity, prefix: prefix, into: &r) }
        if folder.coveredBy != "manifest", let last = folder.chain.lastValid {
            folder.coveredBy = "checkpoints"
            let before = r.reach.count
            folder.signed.formUnion(ChainCheck.checkReach(last, directory: directory, prefix: prefix, into: &r))
            r.unproven += r.reach[before...].reduce(0) { $0 + max(0, $1.size - $1.proven) }
            if last.final, !folder.signedManifest {
                // Downgrade: the chain says the recording finished; only its signed manifest may say so.
                let what = read == nil ? "missing" : manifest == nil ? "not a manifest" : "not signed"
                r.problem("checkpoint \(last.number) marks the end of the recording, but manifest.json is \(what): the signed final manifest was removed or replaced",
                          file: prefix + "manifest.json", checkpoint: last.number)
            }
        }
        return folder
    }

    /// manifest.json as a JSON object: nil if there is none; a problem and `.null` if it is
    /// anything else (a directory, a symbolic link, an array, more than 8 MiB, not JSON).
    func readManifest(_ directory: URL, prefix: String, into r: inout VerifyReport) -> JSONValue? {
        let file = prefix + "manifest.json"
        let path = directory.appendingPathComponent("manifest.json").path
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        guard st.st_mode & S_IFMT == S_IFREG else {
            r.problem("not a regular file (\(Self.kind(st.st_mode))): replaced", file: file)
            return .null
        }
        guard st.st_size <= 8 << 20 else {
            r.problem("\(st.st_size) bytes: larger than any manifest the recorder writes (8 MiB)", file: file)
            return .null
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            r.problem("cannot be read", file: file)
            return .null
        }
        do {
            let value = try JSONValue.parse(data)
            guard value.object != nil else {
                r.problem("not a JSON object", file: file)
                return .null
            }
            return value
        } catch {
            r.problem("\(error)", file: file)
            return .null
        }
    }

    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFLNK: "a symbolic link"
        case S_IFIFO: "a FIFO"
        case S_IFCHR, S_IFBLK: "a device"
        default: "not a file"
        }
    }

    /// The manifest (signed or not) names the recording the checkpoints name: else one of them
    /// is another recording's (a splice).
    func compare(_ manifest: JSONValue, with identity: RecordingIdentity, prefix: String, into r: inout VerifyReport) {
        guard manifest.object != nil else { return }
        let file = prefix + "manifest.json"
        if let id = manifest["recording"]?.string, id != identity.id {
            r.problem("names recording \(id), the checkpoints recording \(identity.id): the files are another recording's", file: file)
        }
        if let room = manifest["room"]?.int, room != identity.room {
            r.problem("names room \(room), the checkpoints room \(identity.room): the files are another recording's", file: file)
        }
        if let janus = manifest["janus"]?.string, janus != identity.janus {
            r.problem("names Janus \(janus), the checkpoints \(identity.janus): the files are another recording's", file: file)
        }
        if let proof = manifest["proof"], RecordingIdentity(json: proof["recording"]) != identity {
            r.problem("proof.recording is not the recording the checkpoints name (\(identity.summary))", file: file)
        }
    }

    /// Every folder's checkpoints name one recording, in one format.
    func sameRecording(_ folders: [(label: String, outcome: ChainCheck.Outcome)], into r: inout VerifyReport) {
        let named = folders.filter { !$0.outcome.lines.isEmpty }
        guard let first = named.first else { return }
        for f in named.dropFirst() where f.outcome.identity != first.outcome.identity || f.outcome.format != first.outcome.format {
            r.problem("\(f.label)'s checkpoints name \(f.outcome.identity?.summary ?? "no recording (format \(f.outcome.format))"), \(first.label)'s "
                      + "\(first.outcome.identity?.summary ?? "no recording (format \(first.outcome.format))"): the folders are two recordings'", file: f.label + "/" + ProofChain.fileName)
        }
    }
}
