public import Crypto
public import Foundation

/// The per-call AES-256 key (ECALL-WIRE §1). Its bytes are never printed.
// @unchecked: SymmetricKey is immutable (copy-on-write bytes) but not marked Sendable in swift-crypto 3.
public struct CallKey: @unchecked Sendable, CustomStringConvertible {
    public let symmetricKey: SymmetricKey
    /// Per-frame AES-GCM contexts for this key (OpenSSL), shared by every copy of the key.
    let pool: GCMPool

    /// A key from exactly 32 raw bytes.
    public init<Bytes: ContiguousBytes>(bytes: Bytes) throws(KeyError) {
        let count = bytes.withUnsafeBytes { $0.count }
        guard count == 32 else { throw KeyError.wrongLength(count) }
        self.symmetricKey = SymmetricKey(data: bytes)
        self.pool = GCMPool(key: bytes.withUnsafeBytes { Array($0) })
    }

    /// The same key with a cipher pool of its own: for many threads (hundreds of load-test
    /// bots) that would otherwise all queue on one pool's lock for every frame.
    public func withOwnCiphers() -> CallKey {
        symmetricKey.withUnsafeBytes { try! CallKey(bytes: $0) }  // 32 bytes: cannot fail
    }

    /// A key from 64 hex characters (surrounding white space ignored).
    public init(hex: String) throws(KeyError) {
        let text = hex.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 64 else { throw KeyError.wrongLength(text.utf8.count / 2) }
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        var high: UInt8?
        for c in text.utf8 {
            guard let nibble = Self.nibble(c) else { throw KeyError.notHex }
            if let h = high { bytes.append(h << 4 | nibble); high = nil } else { high = nibble }
        }
        try self.init(bytes: bytes)
    }

    /// A new random key, as a caller makes one per call.
    public static func random() -> CallKey {
        // SymmetricKey(size:) draws from the system CSPRNG.
        try! CallKey(bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    /// Reads a key file holding 32 raw bytes or 64 hex characters.
    public init(contentsOfFile path: String) throws(KeyError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw KeyError.unreadableFile(path) }
        if data.count == 32 {
            try self.init(bytes: data)
        } else if let text = String(data: data, encoding: .utf8) {
            do { try self.init(hex: text) } catch { throw KeyError.badFile(path) }
        } else {
            throw KeyError.badFile(path)
        }
    }

    public var description: String { "CallKey(<redacted>)" }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Why a call key could not be made. The message says what to fix.
public enum KeyError: Error, Equatable, CustomStringConvertible {
    case wrongLength(Int)
    case notHex
    case unreadableFile(String)
    case badFile(String)
    /// A FrameCryptor key index at or past the clients' key ring size.
    case indexOutOfRing(UInt64, Int)
    /// The cipher for a key could not be set up (OpenSSL refused): not the key's fault.
    case cipherUnavailable

    public var description: String {
        switch self {
        case .wrongLength(let n): "a call key is 32 bytes (64 hex characters), got \(n) bytes"
        case .notHex: "the call key is not hexadecimal: give 64 characters 0-9a-f"
        case .unreadableFile(let p): "cannot read key file \(p): check the path and its permissions"
        case .badFile(let p): "key file \(p) must hold 32 raw bytes or 64 hex characters"
        case .indexOutOfRing(let i, let size): "key index \(i) is past the key ring (indexes 0 to \(size - 1); see --key-ring-size)"
        case .cipherUnavailable: "the cipher for this key could not be set up (libcrypto refused it): check the OpenSSL installation"
        }
    }
}
