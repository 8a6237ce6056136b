import Synchronization
import Locking

/// The ciphers of one key, lent to one thread at a time. A stream takes one per frame and
/// gives it back, so after the first frame on each thread no frame allocates.
final class GCMPool: Sendable {
    // The ciphers are only touched by the thread that took them out of the pool.
    private struct Idle: @unchecked Sendable { var ciphers: [GCMCipher] = [] }
    private let idle = Locked(Idle())
    private let key: [UInt8]

    init(key: [UInt8]) {
        self.key = key
        idle.withLock { $0.ciphers.reserveCapacity(8) }
    }

    /// Runs `body` with a cipher of this key; nil if OpenSSL could not set one up.
    func withCipher<R>(_ body: (GCMCipher) -> R) -> R? {
        let cipher = idle.withLock { $0.ciphers.popLast() } ?? key.withUnsafeBytes { GCMCipher(key: $0) }
        guard let cipher else { return nil }
        defer { idle.withLock { if $0.ciphers.count < 8 { $0.ciphers.append(cipher) } } }
        return body(cipher)
    }
}
