public import Foundation
import Crypto

/// AWS Signature Version 4 for one request, as S3 checks it (docs.aws.amazon.com, "Signature
/// Version 4 signing process"): a canonical request, the string to sign over its SHA-256, and
/// an HMAC chain from the secret key through date, region and service. Pure: the caller gives
/// the time, so tests compare it with botocore's signer on the same request.
public struct SigV4: Sendable {
    public var credentials: S3Credentials
    public var region: String
    public var service: String

    public init(credentials: S3Credentials, region: String, service: String = "s3") {
        (self.credentials, self.region, self.service) = (credentials, region, service)
    }

    /// One request as it will be sent. `path` is not yet encoded (an object key as it is);
    /// `headers` must include `host`.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: [(String, String)]
        public var headers: [(String, String)]
        /// Hex SHA-256 of the body (S3 also wants it as `x-amz-content-sha256`).
        public var payloadHash: String

        public init(method: String, path: String, query: [(String, String)] = [], headers: [(String, String)], payloadHash: String) {
            (self.method, self.path, self.query, self.headers, self.payloadHash) = (method, path, query, headers, payloadHash)
        }
    }

    /// The headers to add to `request` signed at `date`: `x-amz-date`, `x-amz-content-sha256`,
    /// the session token if any, and `authorization`.
    public func sign(_ request: Request, at date: Date) -> [(String, String)] {
        let stamp = Self.timestamp(date)
        var added = [("x-amz-date", stamp), ("x-amz-content-sha256", request.payloadHash)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        var signed = request
        signed.headers += added
        let (canonical, signedHeaders) = canonicalRequest(signed)
        let scope = "\(stamp.prefix(8))/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", stamp, scope, Self.hex(SHA256.hash(data: Data(canonical.utf8)))].joined(separator: "\n")
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: signingKey(day: String(stamp.prefix(8)))))
        added.append(("authorization", "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"))
        return added
    }

    /// The canonical request and its signed-headers list: every header given is signed.
    public func canonicalRequest(_ request: Request) -> (text: String, signedHeaders: String) {
        var headers: [String: String] = [:]
        for (name, value) in request.headers {
            let v = value.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            let k = name.lowercased()
            headers[k] = headers[k].map { "\($0),\(v)" } ?? v
        }
        let names = headers.keys.sorted()
        let pairs: [(String, String)] = request.query.map { (Self.encode($0.0, slash: true), Self.encode($0.1, slash: true)) }
        // By encoded name, then value (byte order: both are ASCII now).
        let sorted = pairs.sorted { a, b in a.0 == b.0 ? a.1 < b.1 : a.0 < b.0 }
        let query = sorted.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let signedHeaders = names.joined(separator: ";")
        let text = [request.method, Self.encode(request.path, slash: false), query,
                    names.map { "\($0):\(headers[$0]!)\n" }.joined(), signedHeaders, request.payloadHash].joined(separator: "\n")
        return (text, signedHeaders)
    }

    func signingKey(day: String) -> SymmetricKey {
        func mac(_ key: SymmetricKey, _ text: String) -> SymmetricKey {
            SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
        }
        let secret = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        return mac(mac(mac(mac(secret, day), region), service), "aws4_request")
    }

    /// URI encoding as SigV4 defines it: every byte but A-Z a-z 0-9 - _ . ~ as %XX (upper
    /// case); `/` kept in paths (S3 does not normalise or double-encode them).
    public static func encode(_ text: String, slash: Bool) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where !slash:
                out.append("/")
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    public static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
