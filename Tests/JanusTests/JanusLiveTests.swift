import Foundation
import Janus
import Logging
import Testing

/// Against the real Janus that `make test` starts (scripts/in-netns sets SFUBOT_JANUS_URL).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["SFUBOT_JANUS_URL"] != nil, "needs the local Janus: run `make test`"))
struct JanusLiveTests {
    let url = ProcessInfo.processInfo.environment["SFUBOT_JANUS_URL"] ?? ""
    let log = Logger(label: "test.janus")

    @Test func createRoomJoinAndMissingRoom() async throws {
        let session = try await JanusSession.connect(url: url, logger: log)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let room = try await VideoRoom.createRoom(handle)
        #expect(try await VideoRoom.exists(handle, room: room))
        #expect(try await VideoRoom.exists(handle, room: room + 1) == false)
        let joined = try await VideoRoom.joinAsPublisher(handle, room: room, display: "7:Test")
        #expect(joined.publishers.isEmpty)

        let other = try await session.attach(plugin: VideoRoom.plugin)
        await #expect(throws: JanusError.plugin(code: 426, reason: "No such room (\(room + 1))")) {
            _ = try await VideoRoom.joinAsPublisher(other, room: room + 1, display: "8:Nobody")
        }
        await session.close()
        await #expect(throws: JanusError.disconnected) { _ = try await session.attach(plugin: VideoRoom.plugin) }
    }

    @Test func unreachableJanusIsAClearError() async {
        await #expect {
            _ = try await JanusSession.connect(url: "ws://127.0.0.1:1", logger: log)
        } throws: { error in
            guard let e = error as? JanusError, e.isUnreachable, e.isConnectionProblem else { return false }
            return String(describing: error).contains("Janus unreachable")
        }
    }
}
