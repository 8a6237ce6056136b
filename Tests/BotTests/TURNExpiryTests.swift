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

    /// Refused credentials are fetched again where they came from: the credentials file (read
    /// again: rotated or not), `/credentials` (the agent's fetch); a fixed password has nowhere.
    @Test func refusedCredentialsAreFetchedAgainWhereTheyCameFrom() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-refresh-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("turn.cred")
        try Data("1799999990:rec\nold\n".utf8).write(to: file)
        var c = try Self.config("1799999990:rec", policy: .relay)
        c.ice.credential = .password(username: "1799999990:rec", password: "old")
        let (none, nothing) = await c.refreshedTURN()
        #expect(nothing.notes.isEmpty && !nothing.changed && none.ice.credentialsExpired(now: Self.now) != nil)
        c.ice.credentialsFile = file.path
        let (_, same) = await c.refreshedTURN()
        #expect(!same.changed && same.notes == ["the credentials file \(file.path) holds the same ones"])
        try Data("1800003600:rec\nnew\n".utf8).write(to: file)
        let issued = ICEServers(servers: [try ICEServer(parsing: "turn:127.0.0.1:3479")], credential: .password(username: "1800003600:ecall", password: "fresh"))
        c.fetchIssuedTURN = { issued }
        let (fresh, rotated) = await c.refreshedTURN()
        #expect(rotated.changed && rotated.notes.count == 2, "\(rotated.notes)")
        #expect(fresh.ice.credentialsExpired(now: Self.now) == nil && fresh.issuedTURN.servers.map(\.hostPort) == ["127.0.0.1:3479"])
        if case .password(let user, let password) = fresh.ice.credential { #expect(user == "1800003600:rec" && password == "new") } else { Issue.record("not a password") }
        // A file that cannot be read is said so; nothing changes.
        try FileManager.default.removeItem(at: file)
        c.fetchIssuedTURN = nil
        let (kept, unreadable) = await c.refreshedTURN()
        #expect(!unreadable.changed && unreadable.notes.first?.contains("could not be read again") == true)
        if case .password(_, let password) = kept.ice.credential { #expect(password == "old") }
    }
}
