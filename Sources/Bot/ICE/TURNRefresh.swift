import Foundation
import Locking
import Synchronization

/// Fresh TURN credentials from where they came from, when the TURN server refused the ones in
/// use (issue 39: expired REST credentials were retried unchanged until the call was given up).
/// A credentials file is read again (whoever rotates it), ECall's `/credentials` fetched again
/// (`fetchIssuedTURN`). Shared-secret credentials need neither: each PeerConnection makes its own.
extension BotConfig {
    /// What fetching again did, for the log and the manifest; never a credential.
    public struct TURNRefreshOutcome: Sendable, Equatable {
        /// Where from ("the credentials file PATH", "/credentials"), each with what came of it.
        public var notes: [String] = []
        /// Whether any credential differs from before.
        public var changed = false
    }

    /// A copy with the TURN credentials fetched again where they came from, and what was done.
    /// Nothing to fetch (fixed `--turn-password`, a shared secret, no TURN): unchanged, no notes.
    public func refreshedTURN() async -> (BotConfig, TURNRefreshOutcome) {
        var next = self, outcome = TURNRefreshOutcome()
        if let path = ice.credentialsFile {
            do {
                let (user, password) = try Self.readCredentials(path)
                if case .password(let u, let p) = ice.credential, u == user, p == password {
                    outcome.notes.append("the credentials file \(path) holds the same ones")
                } else {
                    next.ice.credential = .password(username: user, password: password)
                    outcome.changed = true
                    outcome.notes.append("read anew from the credentials file \(path)")
                }
            } catch { outcome.notes.append("the credentials file \(path) could not be read again: \(error)") }
        }
        if let fetch = fetchIssuedTURN {
            do {
                let fresh = try await fetch()
                outcome.changed = outcome.changed || !Self.sameCredential(fresh.credential, issuedTURN.credential)
                next.issuedTURN = fresh
                outcome.notes.append("fetched anew from /credentials")
            } catch { outcome.notes.append("/credentials could not be fetched again: \(error)") }
        }
        return (next, outcome)
    }

    /// The two lines of a credentials file (username, password), as `--turn-credentials-file`
    /// reads them (its checks of owner and mode ran at the start).
    static func readCredentials(_ path: String) throws -> (String, String) {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard data.count <= 4096 else { throw TURNFileError(path: path) }
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init)
        guard lines.count == 2, !lines[0].isEmpty, !lines[1].isEmpty else { throw TURNFileError(path: path) }
        return (lines[0], lines[1])
    }

    private static func sameCredential(_ a: ICEServers.Credential, _ b: ICEServers.Credential) -> Bool {
        switch (a, b) {
        case (.none, .none): true
        case (.password(let u1, let p1), .password(let u2, let p2)): u1 == u2 && p1 == p2
        default: false
        }
    }
}

struct TURNFileError: Error, CustomStringConvertible {
    let path: String
    var description: String { "\(path) needs two lines, the username and the password" }
}

/// The TURN servers a participant fetched anew while it runs, for one whose `config` cannot
/// change (`Player` is a struct): applied over the config at each new PeerConnection.
final class FreshTURN: Sendable {
    private let state = Locked<(ice: ICEServers, issued: ICEServers)?>(nil)

    func set(_ c: BotConfig) { state.withLock { $0 = (c.ice, c.issuedTURN) } }

    func applied(to config: BotConfig) -> BotConfig {
        guard let fresh = state.withLock({ $0 }) else { return config }
        var c = config
        c.ice = fresh.ice
        c.issuedTURN = fresh.issued
        return c
    }
}
