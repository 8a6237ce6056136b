import Bot
import ECall
import Foundation
import Logging

extension Agent {
    /// When to fetch TURN credentials again: halfway to the expiry a coturn REST username
    /// carries (`<unix time>:<user>`), at least a minute from now; hourly for credentials
    /// without one. A call started after that gets the new ones; calls under way keep theirs
    /// (their allocation was made with them) until their media is set up again.
    static func turnRefreshDelay(username: String?, now: Date = Date()) -> Duration {
        guard let username, let colon = username.firstIndex(of: ":"), let expiry = Double(username[..<colon]) else { return .seconds(3600) }
        return .seconds(max(60, (expiry - now.timeIntervalSince1970) / 2))
    }

    /// `/credentials` fetched now for a call whose TURN server refused the credentials it had
    /// (`BotConfig.fetchIssuedTURN`); kept for the next calls too.
    func freshTURN() async throws -> ICEServers {
        guard let c = connections else { throw AgentError.backend("not logged in: no /credentials to fetch") }
        let servers = turnServers(try await c.backend.credentials())
        if case .running(var now) = state {
            now.issuedTURN = servers
            state = .running(now)
        }
        return servers
    }

    /// Fetches `/credentials` again and keeps its TURN servers for the next calls; returns
    /// when to do it again (a minute after a failure).
    func refreshTURN() async -> Duration {
        guard let c = connections else { return .seconds(60) }
        let fresh: Credentials
        do { fresh = try await c.backend.credentials() } catch {
            log.warning("could not fetch TURN credentials again (/credentials): \(error); trying again in 60 s")
            return .seconds(60)
        }
        guard case .running(var now) = state else { return .seconds(60) }
        now.issuedTURN = turnServers(fresh)
        state = .running(now)
        log.debug("TURN credentials renewed for \(now.issuedTURN.servers.count) server(s)")
        return Self.turnRefreshDelay(username: fresh.turnUsername)
    }
}
