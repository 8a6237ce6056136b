public import Foundation
import PrivateIO

/// An access key for the store: from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
/// (/ AWS_SESSION_TOKEN), or from a file no one else can read holding the same three as
/// `NAME=value` lines (or `aws_access_key_id = value`, as in ~/.aws/credentials' default profile).
/// Its description names the key id only: the secret and token never reach a log.
public struct S3Credentials: Sendable, CustomStringConvertible {
    public let accessKeyID: String
    public let secretAccessKey: String
    public let sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        (self.accessKeyID, self.secretAccessKey, self.sessionToken) = (accessKeyID, secretAccessKey, sessionToken)
    }

    public var description: String { "access key \(accessKeyID)\(sessionToken == nil ? "" : " (with a session token)")" }

    /// From the environment; nil if neither variable is set.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(ObjectStoreError) -> S3Credentials? {
        let id = environment["AWS_ACCESS_KEY_ID"].flatMap { $0.isEmpty ? nil : $0 }
        let secret = environment["AWS_SECRET_ACCESS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        if id == nil, secret == nil { return nil }
        guard let id, let secret else {
            throw ObjectStoreError(.credentials("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together"))
        }
        return S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
    }

    /// From a 0600 file (PrivateFile's rules: regular, not open to others, bounded).
    public static func read(file path: String) throws(ObjectStoreError) -> S3Credentials {
        let contents: PrivateFile.Contents
        do { contents = try PrivateFile.read(path, what: "the S3 credentials file", maxBytes: 64 * 1024) } catch {
            throw ObjectStoreError(.credentials("\(error)"))
        }
        var values: [String: String] = [:]
        var section: String?
        for raw in String(decoding: contents.bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                section = line.trimmingCharacters(in: CharacterSet(charactersIn: "[] "))
                continue
            }
            // Of an AWS-style file, only the default profile (or a file without sections).
            guard section == nil || section == "default", let eq = line.firstIndex(of: "=") else { continue }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces).uppercased()
            values[key] = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
        }
        guard let found = try fromEnvironment(values) else {
            throw ObjectStoreError(.credentials("\(path) has no AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY lines"))
        }
        return found
    }
}
