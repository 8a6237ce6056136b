import Foundation
import Locking
public import Proof
import FrameCrypto
import Logging
import Synchronization

/// The recorder's proof: checkpoints into `proof.jsonl` while recording (`checkpoint`), and the
/// signed `proof` of the final manifest (`seal`). All file reading runs off the cooperative pool.
public final class RecordingProof: Sendable {
    public let key: SigningKey
    let chain: ProofChain
    /// Files are named relative to `folder.shown` and reached through `folder.access`.
    let folder: RecordingFolder
    /// Where a file named by its shown absolute path (a mix outside the folder) is reached.
    let locate: @Sendable (String) -> URL
    private let complained = Atomic<Bool>(false)
    /// Seconds between checkpoints.
    public static let interval = 5

    init(key: SigningKey, folder: RecordingFolder, identity: RecordingIdentity, instance: String?, takeover: ChainTakeover?, head: ChainHead?,
         locate: @escaping @Sendable (String) -> URL) {
        self.key = key
        self.folder = folder
        self.locate = locate
        chain = ProofChain(directory: folder.access, key: key, identity: identity, instance: instance, takeover: takeover, head: head, locate: locate)
    }

    /// Every file of the recording: its folder's (`RecordingFiles`, the list serve uploads) but
    /// the proof's own, and a mix outside the folder (named by its path). Blocking: off the pool.
    static func files(_ m: RecordingManifest, in folder: RecordingFolder) throws(RecordingFiles.Failure) -> [String] {
        try folder.fileNames().filter { !RecordingFiles.proofOwn.contains($0) } + outside(m, of: folder)
    }

    /// The mixes (this run's and earlier runs') written outside the folder, by their paths.
    static func outside(_ m: RecordingManifest, of folder: RecordingFolder) -> [String] {
        Array(Set(([m.mix].compactMap { $0 } + m.earlierMixes).map { name($0, in: folder) }.filter { $0.hasPrefix("/") })).sorted()
    }

    /// `files`, or (the folder cannot be listed) what is outside it, said in the log.
    private func files(_ m: RecordingManifest, log: Logger) async -> [String] {
        let folder = self.folder
        return await OffPool.run { () -> [String] in
            do { return try Self.files(m, in: folder) } catch {
                log.error("the proof cannot list the recording's folder (\(folder.showing("\(error)"))): its files are left out of this checkpoint")
                return Self.outside(m, of: folder)
            }
        }
    }

    /// Names as the proof gives them: relative to the folder if inside it, else the path.
    static func name(_ path: String, in folder: RecordingFolder) -> String {
        let prefix = folder.shown.standardizedFileURL.path + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
    }

    /// One checkpoint of every file `live` lists, with its counters; `final` once it is finished.
    func checkpoint(_ live: RecordingManifest, log: Logger, final: Bool = false) async {
        let files = await self.files(live, log: log)
        let feeds: [JSONValue] = live.feeds.map { f in
            .object([
                "feed_id": .number(Double(f.feedID)), "display": .string(f.display), "kind": .string(f.kind),
                "file": .string(f.file), "frames": .number(Double(f.written ?? f.frames.opened)),
                "received": .number(Double(f.frames.received)), "dropped": .number(Double(f.frames.droppedTotal)),
            ])
        }
        let counters = JSONValue.object(["feeds": .array(feeds), "gaps": .number(Double(live.gaps.count))])
        do {
            try await chain.checkpoint(files: files, counters: counters, final: final)
            if complained.exchange(false, ordering: .relaxed) { log.notice("checkpoints are written to proof.jsonl again") }
        } catch {
            // Once until one is written again (a full disk would say it every 5 s).
            if !complained.exchange(true, ordering: .relaxed) { log.error("cannot append a checkpoint to proof.jsonl (\(folder.showing("\(error)"))): none is written until there is room again; the chain itself stays whole") }
        }
    }

    /// `final` with its signed proof: every file hashed as it is now (after the read-back).
    /// First the last checkpoint, marked `final`: a chain that says the recording finished
    /// without its signed manifest beside it was downgraded (docs/proof.md). It also carries a
    /// takeover not yet named (a run that ends before its first checkpoint).
    func seal(_ final: RecordingManifest, log: Logger) async -> RecordingManifest {
        await checkpoint(final, log: log, final: true)
        var m = final
        let (folder, locate, outside) = (self.folder, self.locate, Self.outside(m, of: folder))
        let cost = chain.cost
        let files: [ManifestProof.File] = await OffPool.run { cost.measure {
            // The folder's files as serve uploads them (RecordingFiles), a mix outside it by its path.
            var out: [ManifestProof.File] = []
            do {
                out = try folder.files(except: RecordingFiles.proofOwn).map { .init(name: $0.name, bytes: $0.size, sha256: $0.sha256) }
            } catch {
                log.error("the proof cannot read the recording's folder (\(folder.showing("\(error)"))): its files are not signed")
            }
            for n in outside {
                if let d = try? FileDigest.of(locate(n)) { out.append(.init(name: n, bytes: d.size, sha256: d.sha256)) }
            }
            return out.sorted { $0.name < $1.name }
        } }
        let end = chain.end
        m.proof = ManifestProof(
            algorithm: key.publicKey.algorithm, publicKey: key.publicKey.der.base64EncodedString(), fingerprint: key.publicKey.fingerprint,
            signedAt: Date(), files: files, participants: Self.participants(m), keyEpochs: Self.epochs(m), gaps: m.gaps,
            chain: end.last.map { .init(checkpoints: end.count, last: $0) }, signature: nil)
        m.proof?.recording = chain.identity
        do {
            let value = try JSONValue.parse(Self.encoder.encode(m)).removing("signature", at: ["proof"])
            m.proof?.signature = try key.sign(Canonical.bytes(value)).base64EncodedString()
        } catch {
            log.error("cannot sign the manifest: \(error)")
            m.proof = nil
        }
        return m
    }

    /// What the proof cost this recording, for its last log line (and `make bench-record`).
    var costLine: String {
        let own = chain.cost.seconds, process = ProofCost.processSeconds()
        return "proof: \(chain.end.count) checkpoints and the final hashes took \(String(format: "%.3f", own)) s of CPU, "
            + "\(String(format: "%.2f", 100 * own / max(process, 1e-9))) % of this process's \(String(format: "%.1f", process)) s"
    }

    static func participants(_ m: RecordingManifest) -> [ManifestProof.Participant] {
        var byUser: [String: ManifestProof.Participant] = [:]
        for f in m.feeds {
            var p = byUser[f.userID] ?? .init(userID: f.userID, display: f.display, files: [], frames: 0)
            if !p.files.contains(f.file) { p.files.append(f.file) }
            p.frames += f.frames.opened
            byUser[f.userID] = p
        }
        return byUser.values.sorted { $0.userID < $1.userID }
    }

    static func epochs(_ m: RecordingManifest) -> [ManifestProof.KeyEpoch] {
        guard m.e2ee else { return [] }
        return m.feeds.flatMap { f -> [ManifestProof.KeyEpoch] in
            guard let byIndex = f.openedByKeyIndex else {
                return [.init(feedID: f.feedID, key: "call", from: f.firstFrame, to: f.lastFrame, frames: f.frames.opened)]
            }
            return byIndex.keys.sorted().map { .init(feedID: f.feedID, key: $0, from: f.firstFrame, to: f.lastFrame, frames: byIndex[$0] ?? 0) }
        }
    }

    /// As `RecordingManifest.write` encodes (the values, not the layout, are what is signed).
    static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.dateEncodingStrategy = .custom { date, enc in
            var c = enc.singleValueContainer()
            try c.encode(date.formatted(RecordingManifest.timeFormat))
        }
        return e
    }
}
