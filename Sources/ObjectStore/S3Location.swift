public import Foundation

/// Where objects go: `s3://bucket/prefix`, and the endpoint that serves the bucket. With
/// `--s3-endpoint` (an S3-compatible store: MinIO, Ceph, moto) requests are path-style
/// (`endpoint/bucket/key`), as those stores expect; without it, AWS's virtual-hosted style.
public struct S3Location: Sendable, CustomStringConvertible {
    public let bucket: String
    /// Without a leading or trailing `/`; empty for the bucket's root.
    public let prefix: String
    public let endpoint: URL
    public let pathStyle: Bool
    public let region: String

    /// `storage` is `s3://bucket/prefix`; `endpoint` nil means AWS in `region`.
    public init(storage: String, endpoint: String? = nil, region: String? = nil,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws(ObjectStoreError) {
        guard storage.hasPrefix("s3://") else { throw ObjectStoreError(.location("\(storage) is not s3://bucket/prefix")) }
        let rest = storage.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        guard (3...63).contains(bucket.count), bucket.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "-" || $0 == "." }) else {
            throw ObjectStoreError(.location("\"\(bucket)\" is not an S3 bucket name (3–63 lower-case letters, digits, - and .)"))
        }
        self.bucket = bucket
        prefix = rest.dropFirst(bucket.count).split(separator: "/").joined(separator: "/")
        self.region = region ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1"
        if let endpoint {
            guard let url = URL(string: endpoint), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw ObjectStoreError(.location("--s3-endpoint \(endpoint) is not an http(s) URL"))
            }
            self.endpoint = url
            pathStyle = true
        } else {
            self.endpoint = URL(string: "https://\(bucket).s3.\(self.region).amazonaws.com")!
            pathStyle = false
        }
    }

    public var description: String { "s3://\(bucket)/\(prefix) at \(endpoint.absoluteString)" }

    /// The object key for a name under the prefix.
    public func key(_ name: String) -> String { prefix.isEmpty ? name : "\(prefix)/\(name)" }

    /// The request path for a key (nil: the bucket itself), not yet URI-encoded.
    public func path(key: String?) -> String {
        let base = pathStyle ? "/\(bucket)" : ""
        guard let key else { return base.isEmpty ? "/" : base }
        return "\(base)/\(key)"
    }

    /// `host[:port]` as sent in the Host header (and signed).
    public var hostHeader: String {
        let host = endpoint.host ?? ""
        return endpoint.port.map { "\(host):\($0)" } ?? host
    }

    /// The object's URL (what webhooks and manifests name).
    public func url(key: String) -> String {
        "\(endpoint.scheme ?? "https")://\(hostHeader)\(SigV4.encode(path(key: key), slash: false))"
    }
}
