import Foundation

/// The keys of a format that names them, as PQSRTC's key provider holds them: shared keys
/// (`--key-hex`, index 0 for every participant unless a participant has its own) and each
/// participant's own (`--key-map`, `--key-feed`), by index.
///
/// Thread-safe. Read once per frame from GStreamer streaming threads (one short lock, two
/// dictionary reads); a frame whose key is not there yet is held by its opener (`KeyHold`),
/// never waited for here. Keys are derived (PBKDF2 for FrameCryptor: tens of milliseconds) on the thread that hands
/// them in, never under the lock and never on a streaming thread.
public final class FrameKeyStore<Format: IndexedFormat>: @unchecked Sendable {
    // @unchecked: every stored property is immutable or guarded by `lock`.
    public let format: Format
    private struct Entry {
        var material: KeyMaterial
        var key: Format.Key
    }
    private var shared: [UInt64: Entry] = [:]
    private var own: [String: [UInt64: Entry]] = [:]
    private let lock = NSLock()
    private var observer: (@Sendable (_ participant: String?, _ index: UInt64, _ material: KeyMaterial) -> Void)?

    public init(format: Format) {
        self.format = format
    }

    /// Sets the key at `index`: `participant` nil sets a shared key (every participant without
    /// a key of its own at that index).
    public func set(participant: String?, index: UInt64, material: KeyMaterial) throws(KeyError) {
        let key = try format.key(from: material, index: index)
        lock.lock()
        defer { lock.unlock() }
        let entry = Entry(material: material, key: key)
        if let participant { own[participant, default: [:]][index] = entry } else { shared[index] = entry }
        // Under the lock: the log sees keys in the order they were set.
        observer?(participant, index, material)
    }

    /// Calls `observer` with every key held now and each one set from now on (ratchet steps
    /// included): `--key-log`. It runs under the store's lock, so it must be quick (a write).
    public func observeKeys(_ observer: @escaping @Sendable (_ participant: String?, _ index: UInt64, _ material: KeyMaterial) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        self.observer = observer
        for (index, e) in shared.sorted(by: { $0.key < $1.key }) { observer(nil, index, e.material) }
        for (participant, keys) in own.sorted(by: { $0.key < $1.key }) {
            for (index, e) in keys.sorted(by: { $0.key < $1.key }) { observer(participant, index, e.material) }
        }
    }

    /// Moves the key at `index` one ratchet step on (PQSRTC's `ratchetKey`): a sender seals
    /// with the new key from its next frame. False if there is no such key or the format has
    /// no ratchet.
    @discardableResult
    public func ratchet(participant: String?, index: UInt64) throws(KeyError) -> Bool {
        guard let material = entry(participant: participant, index: index, exact: true)?.material,
              let next = format.ratcheted(material) else { return false }
        try set(participant: participant, index: index, material: next)
        return true
    }

    /// The key `participant` uses at `index`: its own, else the shared one.
    public func key(participant: String, index: UInt64) -> Format.Key? {
        entry(participant: participant, index: index, exact: false)?.key
    }

    /// Participants with keys of their own, and the shared indexes (never a key).
    public var summary: (participants: [String: [UInt64]], shared: [UInt64]) {
        lock.lock()
        defer { lock.unlock() }
        return (own.mapValues { $0.keys.sorted() }, shared.keys.sorted())
    }

    private func entry(participant: String?, index: UInt64, exact: Bool) -> Entry? {
        lock.lock()
        defer { lock.unlock() }
        return lookup(participant: participant, index: index, exact: exact)
    }

    /// Called with the lock held.
    private func lookup(participant: String?, index: UInt64, exact: Bool) -> Entry? {
        guard let participant else { return shared[index] }
        if let e = own[participant]?[index] { return e }
        return exact ? nil : shared[index]
    }
}
