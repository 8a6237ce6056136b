/// Why an upload or a request to the store failed, and what to do. A struct with a private
/// reason, so cases can be added.
public struct ObjectStoreError: Error, CustomStringConvertible, Sendable {
    enum Reason: Sendable {
        case credentials(String)
        case location(String)
        case transport(String)
        case status(Int, code: String?, message: String?, request: String)
        case checksumMismatch(what: String, expected: String, answered: String)
        case localFile(String)
        case protocolError(String)
    }

    let reason: Reason
    init(_ reason: Reason) { self.reason = reason }

    /// Whether another try later can succeed: everything but a local file that is gone or a bad
    /// setup (a 403 is retried too: credentials and bucket policies get fixed while files wait).
    public var retryable: Bool {
        switch reason {
        case .credentials, .location, .localFile: false
        default: true
        }
    }

    /// The store answered something other than what was sent (its checksum disagrees).
    public var isChecksumMismatch: Bool {
        if case .checksumMismatch = reason { return true }
        return false
    }

    public var description: String {
        switch reason {
        case .credentials(let why): "S3 credentials: \(why)"
        case .location(let why): "S3 location: \(why)"
        case .transport(let why): "cannot reach the object store: \(why); the file stays queued and is retried"
        case .status(let status, let code, let message, let request):
            "the object store answered \(status)\(code.map { " \($0)" } ?? "")\(message.map { ": \($0)" } ?? "") to \(request); check the bucket, the credentials' rights and --s3-endpoint"
        case .checksumMismatch(let what, let expected, let answered):
            "the object store's checksum of \(what) is \(answered), the file's is \(expected): the upload is not trusted, the local file is kept and sent again"
        case .localFile(let why): "local file: \(why)"
        case .protocolError(let why): "unexpected answer from the object store: \(why)"
        }
    }
}
