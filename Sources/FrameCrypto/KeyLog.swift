import PrivateIO
import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Locking

/// An opt-in file of every call key a bot used and from when (`--key-log FILE`), so that a
/// recording made across key rotations can be decrypted later, frame by frame, with the key
/// that was in use at the frame's time (`KeyLog.Entries.candidates(at:)`).
///
/// One JSON object per line (`KeyLog.Entry`), appended. The file holds keys in the clear: it is
/// created with mode 0600 and an existing file that group or others can access is refused.
public final class KeyLog: Sendable {
    /// One line: the call (ECall call id, or the room id for `record`), the key, the Unix time
    /// from which it was in use, and its index where the key has one (per-sender key maps).
    public struct Entry: Codable, Sendable, Equatable {
        public var call: Int64
        /// 64 hex characters.
        public var key: String
        /// Unix time in seconds.
        public var from: Double
        public var index: Int?
        /// The sender whose key it is (per-sender key maps); nil for the call key.
        public var participant: String?
        /// The frame format whose key material `key` is (`framecryptor`, `sframe`); nil for
        /// ECall, whose `key` is a 32-byte call key. Readers of one never take the other's.
        public var format: String?

        public init(call: Int64, key: String, from: Double, index: Int? = nil, participant: String? = nil, format: String? = nil) {
            self.call = call
            self.key = key
            self.from = from
            self.index = index
            self.participant = participant
            self.format = format
        }
    }

    public let path: String
    private let fd: Int32
    private let lock = Locked(())
    private let warnedOfFailure = Atomic<Bool>(false)

    /// Opens `path` for appending, creating it with mode 0600. Refuses a file that is not a
    /// regular file of ours or that group or others can access: the log holds keys.
    public init(path: String) throws(KeyLogError) {
        self.path = path
        do { fd = try PrivateFile.openForAppend(path, what: "key log") } catch { throw KeyLogError(.file(error)) }
    }

    deinit { close(fd) }

    /// Appends one entry as one line, in one `write` (O_APPEND: lines from several threads or
    /// processes never interleave). A failed write is returned, never thrown into the key path.
    @discardableResult
    public func append(_ entry: Entry) -> Bool {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard var line = try? encoder.encode(entry) else { return false }
        line.append(0x0A)
        let (written, error) = lock.withLock { _ in
            line.withUnsafeBytes { ($0.count == write(fd, $0.baseAddress, $0.count), errno) }
        }
        // A key missing from the log makes part of a capture undecryptable later: say so, once
        // (FrameCrypto has no logger; the path is the user's, no key is printed).
        if !written, !warnedOfFailure.exchange(true, ordering: .relaxed) {
            FileHandle.standardError.write(Data("sfubot: warning: cannot append to key log \(path): \(String(cString: strerror(error)))\n".utf8))
        }
        return written
    }

    /// Appends `key` for `call`, in use from `from`.
    @discardableResult
    public func append(call: Int64, key: CallKey, from: Double, index: Int? = nil, participant: String? = nil) -> Bool {
        append(Entry(call: call, key: key.exportedHex, from: from, index: index, participant: participant))
    }

    /// Appends key material of a format whose frames name their key, at `index` for
    /// `participant` (nil: shared), in use from `from`.
    @discardableResult
    public func append(call: Int64, format: FrameFormatName, material: KeyMaterial, index: UInt64, participant: String?, from: Double) -> Bool {
        append(Entry(call: call, key: material.bytes.map { String(format: "%02x", $0) }.joined(), from: from, index: Int(index),
                     participant: participant, format: format.rawValue))
    }

    /// A `KeyRing.KeyObserver` that logs every key of `call`.
    public func observer(call: Int64) -> KeyRing.KeyObserver {
        { [self] key, from in append(call: call, key: key, from: from) }
    }

    /// The warning printed when a key log is enabled.
    public static func warning(_ path: String) -> String {
        "sfubot: warning: --key-log \(path) writes the call keys in the clear: whoever reads it can decrypt the call; keep it private and delete it when done"
    }
}

/// Why a key log could not be opened or read. The message says what to fix.
public struct KeyLogError: Error, CustomStringConvertible, Equatable {
    enum Reason: Equatable {
        case file(PrivateFileError)
        case unreadable(String)
        case badLine(String, Int)
    }
    let reason: Reason
    init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .file(let problem): problem.description
        case .unreadable(let p): "cannot read key log \(p)"
        case .badLine(let p, let n): "key log \(p), line \(n): not a key log entry (JSON with call, key, from)"
        }
    }
}

extension CallKey {
    /// The key's 64 hex characters, for key logs and key maps only: never log or print them.
    public var exportedHex: String {
        symmetricKey.withUnsafeBytes { bytes in
            let digits = Array("0123456789abcdef".utf8)
            var out = [UInt8]()
            out.reserveCapacity(64)
            for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0x0F)]) }
            return String(decoding: out, as: UTF8.self)
        }
    }
}
