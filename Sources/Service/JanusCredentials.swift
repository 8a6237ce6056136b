import PrivateIO
#if canImport(Glibc)
import Glibc
#endif
import Foundation
public import Janus

/// Credentials per allowed Janus (`--janus-credentials FILE`): a JSON object from a Janus URL to
/// `{"api_secret": …, "token": …}`. Each Janus is sent only its own: `--api-secret` and
/// `--janus-token` go to `--janus` alone, another allowed Janus gets what this file gives it or
/// nothing. The file holds secrets: it must be a regular file only its owner can read.
public struct JanusCredentials: Sendable {
    public struct Entry: Codable, Sendable, Equatable {
        public var apiSecret: String?
        public var token: String?
        enum CodingKeys: String, CodingKey { case apiSecret = "api_secret", token }
    }

    /// By `JanusAllowList.normal` URL.
    let entries: [String: Entry]

    public init(entries: [String: Entry] = [:]) { self.entries = entries }

    /// Reads `path`; every URL in it must be one of `allowed`.
    public init(path: String, allowed: JanusAllowList) throws(ServeError) {
        let data: [UInt8]
        do { data = try PrivateFile.read(path, what: "--janus-credentials", maxBytes: 1 << 20, followSymlinks: false).bytes } catch {
            throw ServeError(error.description)
        }
        guard let raw = try? JSONDecoder().decode([String: Entry].self, from: Data(data)) else {
            throw ServeError("--janus-credentials \(path) is not a JSON object of Janus URL → {\"api_secret\", \"token\"}")
        }
        var entries: [String: Entry] = [:]
        for (url, entry) in raw {
            guard let n = JanusAllowList.normal(url), allowed.urls.contains(n) else {
                throw ServeError("--janus-credentials names \(url), which is not an allowed Janus (--janus, --janus-allow)")
            }
            entries[n] = entry
        }
        self.entries = entries
    }

    /// The options for a job's Janus: `base` (with `--api-secret`/`--janus-token`) for the default
    /// Janus, else `base`'s timings with only this file's credentials for `url`.
    public func options(for url: String, defaultJanus: String, base: JanusSession.Options) -> JanusSession.Options {
        let n = JanusAllowList.normal(url)
        if n != nil, n == JanusAllowList.normal(defaultJanus) { return base }
        var o = base
        o.apiSecret = n.flatMap { entries[$0]?.apiSecret }
        o.token = n.flatMap { entries[$0]?.token }
        return o
    }
}
