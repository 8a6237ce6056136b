public import Foundation

/// TURN REST credentials (coturn's `use-auth-secret`, as ECall's backend hands them out) carry
/// their expiry in the username, `<unix time>:<user>`. Once it passed, coturn refuses every
/// allocation and refresh: a relayed path dies and no new one comes up. Said as "expired", not
/// as a wrong password (issue 39: six unchanged retries said "check the TURN credentials").
extension ICEServers {
    /// When the fixed credentials' username says they expired, if it says so and that is past.
    /// Shared-secret credentials are made anew for every PeerConnection: never expired here.
    public func credentialsExpired(now: Date = Date()) -> Date? {
        guard case .password(let username, _) = credential, let colon = username.firstIndex(of: ":"),
              let seconds = Double(username[..<colon]), seconds > 1_000_000_000 else { return nil }
        let expiry = Date(timeIntervalSince1970: seconds)
        return expiry <= now ? expiry : nil
    }
}

extension BotConfig {
    /// A loss with what is known of why: a `turns:` server's TLS refusal (`explained(by:)`),
    /// or, on a relayed path, TURN credentials that expired.
    func explain(_ loss: PeerLoss, now: Date = Date()) -> PeerLoss {
        let why = loss.explained(by: tlsBridges)
        let relayed: Bool
        switch why {
        case .turnFailed(nil): relayed = false
        // A path that died: TURN's doing only if media could go nowhere else.
        case .iceFailed, .mediaLost: relayed = true
        default: return why
        }
        let expired = [ice, issuedTURN].filter { !relayed || $0.policy == .relay }.compactMap { $0.credentialsExpired(now: now) }
        guard let expiry = expired.min() else { return why }
        return .turnFailed("the TURN credentials expired at \(expiry.formatted(.iso8601)) (their username, EXPIRY:USER, says so): the TURN server refuses them; give fresh ones (a new --turn-credentials-file, or --turn-secret-file to make them for each connection)")
    }
}
