import Foundation
import FrameCrypto
import Logging
import Testing
@testable import Bot

/// Issue 39: TURN REST credentials whose username says they expired are reported as expired,
/// not as a wrong password; a direct path's loss is not blamed on them.
@Suite struct TURNExpiryTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func config(_ username: String, policy: ICEServers.Policy) throws -> BotConfig {
        var c = BotConfig(janusURL: "ws://127.0.0.1:1", room: 1, display: "9:Rec", protection: .e2ee(KeyRing(current: .random())),
                          pipelines: try PipelineLibrary(), logger: .init(label: "test"))
        c.ice = ICEServers(servers: [try ICEServer(parsing: "turn:127.0.0.1:3478")], credential: .password(username: username, password: "p"), policy: policy)
        return c
    }

    @Test func expiredRESTCredentialsAreSaidExpired() throws {
        let expired = try Self.config("1799999990:rec", policy: .relay)
        #expect(expired.ice.credentialsExpired(now: Self.now) == Date(timeIntervalSince1970: 1_799_999_990))
        for loss in [PeerLoss.turnFailed(nil), .iceFailed, .mediaLost] {
            guard case .turnFailed(let text?) = expired.explain(loss, now: Self.now) else { Issue.record("\(loss)"); continue }
            #expect(text.contains("expired at 2027-01-15T07:59:50Z"), "\(text)")
        }
        // Not expired yet, not a REST username, or a direct path that died: as before.
        let valid = try Self.config("1800000100:rec", policy: .relay), plain = try Self.config("rec", policy: .relay)
        #expect(valid.ice.credentialsExpired(now: Self.now) == nil && plain.ice.credentialsExpired(now: Self.now) == nil)
        if case .turnFailed(let text) = valid.explain(.turnFailed(nil), now: Self.now) { #expect(text == nil) } else { Issue.record("not a TURN failure") }
        let direct = try Self.config("1799999990:rec", policy: .all)
        if case .iceFailed = direct.explain(.iceFailed, now: Self.now) {} else { Issue.record("a direct path's loss blamed on TURN") }
    }
}
