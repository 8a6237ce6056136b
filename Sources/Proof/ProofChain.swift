public import Foundation
import Crypto
import Synchronization
import Locking

/// `proof.jsonl`: signed checkpoints of a recording in progress, each naming the one before it
/// by hash. A checkpoint gives every file's size, how much of it is covered (`covered`) and the
/// SHA-256 of those first bytes, hashed incrementally (only what was appended since the last
/// checkpoint is read). Reading happens on a thread of its own, never on the cooperative pool.
///
/// Matroska rewrites the size of a cluster when it closes it: bytes of the cluster still open
/// (its header holds the "unknown" size `1F 43 B6 75 01 FF FF FF FF FF FF FF`) are not covered
/// until the next checkpoint after it closed. Ogg pages are never rewritten.
public final class ProofChain: Sendable {
    public static let fileName = "proof.jsonl"
    /// Where `proof.jsonl` and the files named relative to it are reached.
    public let directory: URL
    /// Where a file named by an absolute path is reached (a held folder's `/proc/self/fd/N`).
    let locate: @Sendable (String) -> URL
    let key: SigningKey
    let head: ChainHead?
    /// Signed in every checkpoint: the recording (that of the chain this continues, if any) and
    /// the serve instance writing (nil for `record`).
    public let identity: RecordingIdentity
    let instance: String?
    /// CPU the checkpoints took (their hashing, signing and writing).
    public let cost = ProofCost()
    private let state: Locked<State>

    struct Tracker {
        var hasher = SHA256()
        var covered = 0
        /// SHA-256 of the first `headBytes` covered (Matroska): changed when the muxer finished
        /// the file (segment size, seek head, duration), and the file is then hashed again.
        var head: SHA256.Digest?
    }

    static let headBytes = 16 << 10

    struct State {
        var trackers: [String: Tracker] = [:]
        var count = 0
        var last: String?
        var lastTime: String?
        /// Named by the next checkpoint, then cleared.
        var takeover: ChainTakeover?
    }

    /// Continues the chain an earlier process left in `directory` (its last line), if any. Taken
    /// over from another instance (`takeover`): continues from the checkpoint that instance
    /// published, unless this folder's own chain already holds it and goes on from there (a
    /// folder both share); the next checkpoint names the takeover. `head` is kept at the newest.
    /// A chain continued keeps the `identity` its lines carry (a resumed `record` makes a new id).
    public init(directory: URL, key: SigningKey, identity: RecordingIdentity, instance: String? = nil, takeover: ChainTakeover? = nil,
                head: ChainHead? = nil, locate: @escaping @Sendable (String) -> URL = { URL(fileURLWithPath: $0) }) {
        self.directory = directory
        self.instance = instance
        self.locate = locate
        self.key = key
        self.head = head
        var s = State()
        let lines = FileManager.default.contents(atPath: directory.appendingPathComponent(Self.fileName).path)?
            .split(separator: 0x0A).filter { !$0.isEmpty } ?? []
        var identity = identity
        if let line = lines.last, let v = try? JSONValue.parse(Data(line)), let n = v["checkpoint"]?.int {
            s.count = n
            s.last = Hex.sha256(Data(line))
            s.lastTime = v["time"]?.string
            identity = RecordingIdentity(json: v["recording"]) ?? identity
        }
        self.identity = identity
        if let takeover {
            s.takeover = takeover
            if let link = takeover.link, !(s.count >= link.checkpoint && lines.contains { Hex.sha256(Data($0)) == link.hash }) {
                s.count = link.checkpoint
                s.last = link.hash
                s.lastTime = link.time
            }
        }
        head?.set(s.last.map { ChainLink(checkpoint: s.count, hash: $0, time: s.lastTime) })
        state = Locked(s)
    }

    /// Checkpoints written (this process and earlier ones), and the last one's hash.
    public var end: (count: Int, last: String?) { state.withLock { ($0.count, $0.last) } }

    /// A takeover not yet named by a checkpoint of this folder.
    public var takeoverPending: Bool { state.withLock { $0.takeover != nil } }

    /// Appends one checkpoint for `files` (names relative to the folder, or absolute paths)
    /// with `counters` (signed as given). Returns its number; throws if it could not be written.
    /// `final`: the recording is finished, its files complete: the signed manifest names this one.
    @discardableResult
    public func checkpoint(files: [String], counters: JSONValue, time: Date = Date(), final: Bool = false) async throws -> Int {
        try await OffPool.run { try self.cost.measure { try self.checkpointNow(files: files, counters: counters, time: time, final: final) } }
    }

    private func checkpointNow(files: [String], counters: JSONValue, time: Date, final: Bool) throws -> Int {
        try state.withLock { s in
            var entries: [JSONValue] = []
            for name in Set(files).sorted() {
                let url = name.hasPrefix("/") ? locate(name) : directory.appendingPathComponent(name)
                var t = s.trackers[name] ?? Tracker()
                guard let size = Self.advance(&t, url) else { continue }
                s.trackers[name] = t
                entries.append(.object([
                    "name": .string(name), "size": .number(Double(size)), "covered": .number(Double(t.covered)),
                    "sha256": .string(Hex.string(t.hasher.finalize())),
                ]))
            }
            var object: [String: JSONValue] = [
                "checkpoint": .number(Double(s.count + 1)), "time": .string(ProofTime.string(time)),
                "previous": s.last.map { .string($0) } ?? .null, "files": .array(entries), "counters": counters,
                "algorithm": .string(key.publicKey.algorithm), "fingerprint": .string(key.publicKey.fingerprint),
                "public_key": .string(key.publicKey.der.base64EncodedString()),
                "format": .number(Double(RecordingIdentity.format)), "recording": identity.json,
                "instance": instance.map { .string($0) } ?? .null,
            ]
            if final { object["final"] = .bool(true) }
            if let t = s.takeover {
                // Linked to the earlier owner's last published checkpoint (`previous`); the time
                // between the two is the gap.
                object["takeover"] = .object([
                    "cause": .string(t.cause), "from": t.from.map { .string($0) } ?? .null,
                    "previous_time": s.lastTime.map { .string($0) } ?? .null,
                ])
            }
            object["signature"] = .string(try key.sign(Canonical.bytes(.object(object))).base64EncodedString())
            let line = Canonical.bytes(.object(object))
            try Self.append(line + Data([0x0A]), to: directory.appendingPathComponent(Self.fileName))
            s.count += 1
            s.last = Hex.sha256(line)
            s.lastTime = object["time"]?.string
            s.takeover = nil
            head?.set(ChainLink(checkpoint: s.count, hash: s.last!, time: s.lastTime))
            return s.count
        }
    }

    /// Hashes what was appended to `url` since `t.covered`, in 1 MiB pieces, up to the start of
    /// a Matroska cluster still open. Returns the file's size, or nil if it cannot be read.
    static func advance(_ t: inout Tracker, _ url: URL) -> Int? {
        let fd = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int(st.st_size)
        // A file shorter than what was covered was replaced: started again from its first byte.
        if size < t.covered { t = Tracker() }
        var stable = size
        let matroska = read(fd, at: 0, count: 4) == [0x1A, 0x45, 0xDF, 0xA3]
        if matroska, let head = t.head, SHA256.hash(data: read(fd, at: 0, count: min(t.covered, headBytes))) != head { t = Tracker() }
        if matroska, let open = lastOpenCluster(fd, from: t.covered, to: size) { stable = open }
        while t.covered < stable {
            let piece = read(fd, at: t.covered, count: min(1 << 20, stable - t.covered))
            guard !piece.isEmpty else { break }
            t.hasher.update(data: piece)
            t.covered += piece.count
        }
        if matroska { t.head = SHA256.hash(data: read(fd, at: 0, count: min(t.covered, headBytes))) }
        return size
    }

    static let openClusterHeader: [UInt8] = [0x1F, 0x43, 0xB6, 0x75, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]

    /// Offset of the last Matroska cluster header in [from, to) whose size is still "unknown",
    /// searched backwards in 1 MiB windows (overlapping by the header's length).
    static func lastOpenCluster(_ fd: Int32, from: Int, to: Int) -> Int? {
        var end = to
        while end > from {
            let start = max(from, end - (1 << 20))
            let window = read(fd, at: start, count: min(to, end + openClusterHeader.count - 1) - start)
            if let i = openCluster(in: window) { return start + i }
            end = start
        }
        return nil
    }

    /// Offset of the last open cluster header in `bytes`.
    static func openCluster(in bytes: [UInt8]) -> Int? {
        let pattern = openClusterHeader
        guard bytes.count >= pattern.count else { return nil }
        var i = bytes.count - pattern.count
        while i >= 0 {
            if bytes[i] == 0x1F, bytes[i..<i + pattern.count].elementsEqual(pattern) { return i }
            i -= 1
        }
        return nil
    }

    /// Up to `count` bytes at `offset` (fewer at the end of the file or on an error).
    static func read(_ fd: Int32, at offset: Int, count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(0, count))
        var got = 0
        while got < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, $0.count - got, off_t(offset + got)) }
            guard n > 0 else { break }
            got += n
        }
        bytes.removeSubrange(got...)
        return bytes
    }

    static func append(_ data: Data, to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SigningKeyError("cannot open \(url.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try FileHandle(fileDescriptor: fd, closeOnDealloc: false).write(contentsOf: data)
        _ = fdatasync(fd)
    }
}

/// Times in the proof: ISO 8601, UTC, milliseconds (as manifest.json writes them).
public enum ProofTime {
    public static func string(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
