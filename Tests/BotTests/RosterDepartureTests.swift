import Foundation
import Janus
import JanusTesting
import Testing
@testable import Bot
import TestSupport

/// The roster keeps when Janus said each publisher left (scripted Janus, no network): the
/// recorder finishes departures' files one at a time, and 20 at once took it seconds, so their
/// presence must end when Janus said so, not when the recorder got to them (issue 42).
@Suite struct RosterDepartureTests {
    @Test("unpublished and leaving are stamped when they arrive, taken once, read late")
    func departuresKeepJanusTime() async throws {
        let fake = FakeJanus(autoReply: [.create, .keepalive, .detach, .destroy], sessionID: 4242)
        let session = try await JanusSession.open(over: fake, url: "fake://janus", options: .init(), logger: Scene.logger)
        let joining = Task { try await RoomRoster.join(session: session, room: 1234, display: "9:Rec", logger: Scene.logger) }
        let handle = fake.acceptAttach(try await fake.nextRequest("attach"))
        fake.reply(to: try await fake.nextRequest("message"), .pluginSuccess(data: ["videoroom": "success", "room": 1234, "exists": true]))
        fake.reply(to: try await fake.nextRequest("message"), .event(data: [
            "videoroom": "joined", "room": 1234, "id": 77, "private_id": 5,
            "publishers": [FakeJanus.publisher(id: 1, display: "1:Ann"), FakeJanus.publisher(id: 2, display: "2:Bob")],
        ]))
        let roster = try await joining.value
        let before = Date()
        fake.push(.unpublished(room: 1234, feed: 1), to: handle)
        fake.push(.leaving(room: 1234, feed: 2), to: handle)
        var changes = roster.changes.makeAsyncIterator()
        let first = await changes.next(), second = await changes.next()
        let heard = Date()
        #expect(first.map { if case .left(let p) = $0 { p.id == 1 } else { false } } == true, "\(String(describing: first))")
        #expect(second.map { if case .left(let p) = $0 { p.id == 2 } else { false } } == true, "\(String(describing: second))")
        // A follower busy finishing other files gets to them later.
        try await Task.sleep(for: .milliseconds(300))
        let ann = try #require(roster.takeDeparture(of: 1)), bob = try #require(roster.takeDeparture(of: 2))
        #expect(ann >= before && ann <= heard && bob >= ann && bob <= heard, "Janus said so at +\(ann.timeIntervalSince(before)) s and +\(bob.timeIntervalSince(before)) s")
        #expect(roster.takeDeparture(of: 1) == nil && roster.takeDeparture(of: 3) == nil, "taken once; never there")
        await roster.leave(announce: false)
        await session.close()
    }
}
