public import FrameCrypto
public import Foundation

/// Which keys may open a recorded frame. A `.mjr` file spans the whole call, and a call's key
/// rotates (every 300 s in ECall), so the choice is per frame: by the publisher that sent it
/// and when. `--key-hex`/`--key-file` give one key for everything (`MjrFixedKey`); a key log
/// or key map can answer per sender and time by conforming to this protocol.
public protocol MjrKeySource: Sendable {
    /// Keys to try for a frame that `sender` (the Janus user id from the file name, nil if the
    /// name does not say) sent at `time` (wall clock, from the file's first-packet time and
    /// the frame's RTP timestamp).
    func candidates(sender: String?, at time: Date) -> KeyRing.Candidates
    /// Opens one recorded frame (audio: an Opus frame; video: a length-prefixed access unit)
    /// into `output`, returning the plaintext's length. By default in ECall's layout with
    /// `candidates`; formats whose frames name their key open with that one key.
    func open(_ frame: UnsafeRawBufferPointer, kind: MediaKind, sender: String?, at time: Date,
              into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int
}

extension MjrKeySource {
    public func open(_ frame: UnsafeRawBufferPointer, kind: MediaKind, sender: String?, at time: Date,
                     into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int {
        switch kind {
        case .audio: try AudioFrame.open(frame, keys: candidates(sender: sender, at: time), into: output)
        case .video: try VideoFrame.open(frame, keys: candidates(sender: sender, at: time), into: output)
        }
    }
}

/// A format whose frames name their key (FrameCryptor, SFrame): each frame opened with the key
/// its index names, the sender's own (its Janus user id from the file name) or the shared one.
/// Time plays no part: the index says which key.
public struct MjrIndexedKeys<Format: IndexedFormat>: MjrKeySource {
    private let store: FrameKeyStore<Format>
    public init(_ store: FrameKeyStore<Format>) { self.store = store }

    public func candidates(sender: String?, at time: Date) -> KeyRing.Candidates { .none }

    public func open(_ frame: UnsafeRawBufferPointer, kind: MediaKind, sender: String?, at time: Date,
                     into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int {
        let format = store.format
        // Recorded video is length-prefixed; a format that opens Annex-B gets it so, and its
        // Annex-B plaintext goes back to lengths for the writer.
        guard kind == .video, format.opensAnnexB else {
            let index = try format.keyIndex(of: frame, kind: kind)
            guard let key = store.key(participant: sender ?? "", index: index) else { throw .missingKey }
            return try format.open(frame, kind: kind, key: key, into: output)
        }
        let annexB = AnnexB.fromLengthPrefixed(Array(frame))
        let opened = annexB.withUnsafeBytes { a in
            Result { () throws(DropReason) -> [UInt8] in
                let index = try format.keyIndex(of: a, kind: kind)
                guard let key = store.key(participant: sender ?? "", index: index) else { throw .missingKey }
                var out = [UInt8](repeating: 0, count: format.openedCapacity(a, kind: kind))
                let n = try out.withUnsafeMutableBytes { o in Result { () throws(DropReason) in try format.open(a, kind: kind, key: key, into: o) } }.get()
                return AnnexB.toLengthPrefixed(Array(out[..<n]))
            }
        }
        let lengths = try opened.get()
        guard lengths.count <= output.count else { throw .malformed }
        output.copyBytes(from: lengths)
        return lengths.count
    }
}

/// One key for every frame.
public struct MjrFixedKey: MjrKeySource {
    private let keys: KeyRing.Candidates
    public init(_ key: CallKey) { keys = KeyRing(current: key).candidates }
    public init(ring: KeyRing) { keys = ring.candidates }
    public func candidates(sender: String?, at time: Date) -> KeyRing.Candidates { keys }
}

/// A key log (`--key-log`, written by `agent`/`record`): for each frame the key in use at its
/// time, then the one before and the one after (a sender late or early to switch).
public struct MjrLoggedKeys: MjrKeySource {
    private let entries: KeyLog.Entries
    public init(_ entries: KeyLog.Entries) { self.entries = entries }
    public func candidates(sender: String?, at time: Date) -> KeyRing.Candidates {
        entries.candidates(at: time.timeIntervalSince1970)
    }
}

/// Per-sender keys (`--key-map`): the keys of the sender named by the file (Janus's user id,
/// i.e. the feed id; a `.mjr` has no display), its three newest indexes. A sender the map does
/// not know gets no key: its frames are dropped and counted.
public struct MjrSenderKeys: MjrKeySource {
    private let map: KeyMap
    public init(_ map: KeyMap) { self.map = map }
    public func candidates(sender: String?, at time: Date) -> KeyRing.Candidates {
        guard let sender, let keys = map.senders[sender]?.keys else { return .none }
        return KeyRing.Candidates(current: keys.first?.key, backup: keys.count > 1 ? keys[1].key : nil,
                                  future: keys.count > 2 ? keys[2].key : nil)
    }
}
