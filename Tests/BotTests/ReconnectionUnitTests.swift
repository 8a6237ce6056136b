import Foundation
import FrameCrypto
import Janus
import Testing
@testable import Bot

/// What a participant coming back decides with no network: which failures are worth another
/// attempt, and how a recording's segments and gaps are read from its feeds.
@Suite struct ReconnectionUnitTests {
    @Test func whatIsRetriedWhileRejoining() {
        // Janus away, restarting, or the room not created again yet: try again.
        #expect(Rejoin.isWorthRetrying(.janus(.unreachable(url: "ws://x", reason: "refused"))))
        #expect(Rejoin.isWorthRetrying(.janus(.disconnected)))
        #expect(Rejoin.isWorthRetrying(.janus(.timeout(request: "create"))))
        #expect(Rejoin.isWorthRetrying(.janus(.janus(code: 458, reason: "No such session"))))
        #expect(Rejoin.isWorthRetrying(.roomNotFound(1234)))
        // Our old publisher id still held by the session Janus has not dropped yet.
        #expect(Rejoin.isWorthRetrying(.janus(.plugin(code: VideoRoom.idTakenCode, reason: "User ID exists"))))
        // What no wait heals: a refused secret, a bad request, a local failure.
        #expect(!Rejoin.isWorthRetrying(.janus(.janus(code: 403, reason: "Unauthorized request"))))
        #expect(!Rejoin.isWorthRetrying(.janus(.plugin(code: 427, reason: "invalid element"))))
        #expect(!Rejoin.isWorthRetrying(.output("disk full")))
        #expect(!Rejoin.isWorthRetrying(.stopped))
    }

    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func feed(_ id: Int64, user: String, kind: String = "audio", file: String, from: Double, to: Double) -> RecordingManifest.Feed {
        RecordingManifest.Feed(
            feedID: id, display: "\(user):Name", userID: user, displayName: "Name", mid: "0", kind: kind, codec: kind == "video" ? "h264" : "opus",
            file: file, joined: t0.addingTimeInterval(from - 0.5), left: t0.addingTimeInterval(to),
            firstFrame: t0.addingTimeInterval(from), lastFrame: t0.addingTimeInterval(to), frames: .zero,
            keyFrameRequests: nil, keyFrames: nil, width: nil, height: nil, firstMediaTime: from, lastMediaTime: to)
    }

    @Test func segmentsAreGroupedByParticipantAcrossFeedIDs() throws {
        // User 4 came back under a new feed id after Janus restarted; user 7 left and came back on their own.
        let feeds = [
            Self.feed(11, user: "4", file: "11-4.opus", from: 0, to: 10),
            Self.feed(22, user: "4", file: "22-4.opus", from: 12.5, to: 30),
            Self.feed(13, user: "7", file: "13-7.opus", from: 1, to: 3),
            Self.feed(13, user: "7", file: "13-7-2.opus", from: 20, to: 30),
        ]
        let outage = RecordingManifest.Gap(start: Self.t0.addingTimeInterval(9.9), end: Self.t0.addingTimeInterval(11), cause: "the Janus session ended")
        let participants = RecordingManifest.participants(of: feeds, recorderGaps: [outage])
        #expect(participants.map(\.userID) == ["4", "7"])
        let four = try #require(participants.first)
        #expect(four.segments.map(\.file) == ["11-4.opus", "22-4.opus"])
        #expect(four.segments.map(\.feedID) == [11, 22])
        let gap = try #require(four.gaps.first)
        #expect(abs((gap.seconds ?? 0) - 2.5) < 0.001)
        #expect(gap.cause == "audio: the Janus session ended", "the gap overlapping the recorder's outage takes its cause")
        let seven = try #require(participants.last)
        #expect(seven.gaps.count == 1)
        #expect(seven.gaps.first?.cause == "audio: the participant left or stopped sending")
    }

    @Test func audioAndVideoSegmentsHaveTheirOwnGaps() {
        let feeds = [
            Self.feed(1, user: "5", kind: "audio", file: "1-5.audio.mka", from: 0, to: 10),
            Self.feed(1, user: "5", kind: "video", file: "1-5.video.mkv", from: 0.2, to: 9),
            Self.feed(1, user: "5", kind: "audio", file: "1-5-2.audio.mka", from: 11, to: 20),
        ]
        let p = RecordingManifest.participants(of: feeds, recorderGaps: [])
        #expect(p.first?.gaps.count == 1, "video has one segment: no gap; audio has one between its two")
        #expect(p.first?.gaps.first?.cause.hasPrefix("audio:") == true)
    }
}
