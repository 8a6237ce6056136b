import Foundation

/// The `openssl` command line, the independent implementation the key-wrapping tests check against.
enum OpenSSLTool {
    struct Failed: Error, CustomStringConvertible {
        let arguments: [String], status: Int32, stderr: String
        var description: String { "openssl \(arguments.joined(separator: " ")) exited \(status): \(stderr)" }
    }

    /// Runs `openssl arguments…` and returns its standard output.
    @discardableResult
    static func run(_ arguments: [String], input: Data? = nil) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = arguments
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = inp
        try p.run()
        if let input { inp.fileHandleForWriting.write(input) }
        try inp.fileHandleForWriting.close()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw Failed(arguments: arguments, status: p.terminationStatus, stderr: String(decoding: error, as: UTF8.self))
        }
        return output
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A P-256 public key in SPKI DER from ECall's raw X‖Y (the fixed P-256 SPKI header, then 04‖X‖Y).
    static func spki(p256Raw raw: Data) -> Data {
        Data([UInt8](hex: "3059301306072a8648ce3d020106082a8648ce3d030107034200") + [0x04]) + raw
    }

    /// HKDF-SHA256 through `openssl kdf` (empty salt), as hex.
    static func hkdf(secret: Data, info: String, length: Int = 32) throws -> Data {
        let out = try run(["kdf", "-keylen", "\(length)", "-kdfopt", "digest:SHA256", "-kdfopt", "hexkey:\([UInt8](secret).hex)",
                           "-kdfopt", "info:\(info)", "HKDF"])
        return Data([UInt8](hex: String(decoding: out, as: UTF8.self).filter(\.isHexDigit).lowercased()))
    }
}
