import Foundation
import GStreamerKit
import Testing
@testable import Bot

/// `SilenceWatch` on instants and sender reports written here (no clock, no network): Janus's
/// reports arriving with flat counts make a silence quiet; anything else past the timeout is a
/// lost path, and the outage begins where the path was last known to work.
@Suite struct SilenceWatchTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let timeout: TimeInterval = 4

    /// Two streams' reports as Janus sends them once a second: `second` of NTP time, `packets` each.
    func reports(_ second: Double, packets: UInt64 = 500) -> SenderReports {
        SenderReports([11: .init(sentAt: 3_000_000_000 + second, packets: packets), 12: .init(sentAt: 3_000_000_000 + second, packets: packets / 5)])
    }

    /// Reads every half second from `from` to `to` seconds into the silence; `report(t)`: what
    /// the read at t saw. The verdicts, by time.
    func run(_ watch: inout SilenceWatch, from: Double = 1, to: Double, _ report: (Double) -> SenderReports?) -> [(Double, SilenceWatch.Verdict)] {
        stride(from: from, through: to, by: 0.5).map { t in (t, watch.judge(report(t), at: t0 + t, timeout: timeout)) }
    }

    @Test("reports each second, nothing counted: wait before the timeout, quiet after, for as long as they come")
    func silentPublishersAreQuiet() {
        var watch = SilenceWatch(peer: 1, began: t0)
        let verdicts = run(&watch, to: 30) { reports($0.rounded(.down)) }
        #expect(verdicts.filter { $0.0 < timeout }.allSatisfy { $0.1 == .wait })
        #expect(verdicts.filter { $0.0 >= timeout }.allSatisfy { $0.1 == .quiet }, "\(verdicts.filter { $0.1 != .quiet && $0.0 >= timeout })")
    }

    @Test("no reports at all (none read, or the path dead with the media): lost at the timeout, since the newest frame")
    func noReportsIsALoss() {
        var unread = SilenceWatch(peer: 1, began: t0)
        #expect(run(&unread, to: 4) { _ in nil }.last?.1 == .lost(since: t0, why: "no media for 4.0 s"))
        // The last report before the path died, read again and again: never newer.
        var frozen = SilenceWatch(peer: 1, began: t0)
        #expect(run(&frozen, to: 4) { _ in reports(-0.3) }.last?.1 == .lost(since: t0, why: "no media for 4.0 s"))
    }

    @Test("reports that stop after a quiet while: lost once the newest is stale, since the last read after which one arrived")
    func reportsThatStopAreALoss() {
        var watch = SilenceWatch(peer: 1, began: t0)
        // Reports until 10 s into the silence, none after (UDP cut at 10.2 s).
        let verdicts = run(&watch, to: 16) { reports(min($0, 10).rounded(.down)) }
        let lost = verdicts.first { if case .lost = $0.1 { true } else { false } }
        #expect(verdicts.filter { $0.0 >= timeout && $0.0 <= 12.5 }.allSatisfy { $0.1 == .quiet })
        #expect(lost?.0 == 13 && lost?.1 == .lost(since: t0 + 9.5, why: "no media for 13.0 s"), "\(String(describing: lost))")
    }

    @Test("reports counting packets sent since the silence began, none arrived: lost, since the newest frame")
    func packetsSentAndNotReceivedAreALoss() {
        var watch = SilenceWatch(peer: 1, began: t0)
        // The first report in the silence (at 2 s) is the baseline; Janus sends on from 3 s.
        let verdicts = run(&watch, to: 4) { t in reports(t.rounded(.down), packets: 500 + (t >= 3 ? UInt64(t.rounded(.down) - 2) * 50 : 0)) }
        #expect(verdicts.last?.1 == .lost(since: t0, why: "no media for 4.0 s while Janus's RTCP sender reports count 120 packet(s) sent to the recorder"),
                "\(String(describing: verdicts.last))")
    }

    @Test("a report from before the silence that arrives late is the baseline's past, not media sent during it")
    func aLateFirstReportIsNotALoss() {
        var watch = SilenceWatch(peer: 1, began: t0)
        // The report read at 1 s was sent 0.9 s before the last frame: the next one counts the
        // packets sent between them, which arrived.
        let verdicts = run(&watch, to: 6) { t in t < 1.5 ? reports(-0.9, packets: 455) : reports(t.rounded(.down)) }
        #expect(verdicts.filter { $0.0 >= timeout }.allSatisfy { $0.1 == .quiet }, "\(verdicts)")
    }

    @Test("stats read from rtpbin: reports with no NTP time yet are not reports")
    func reportsFromStats() {
        let r = SenderReports([RTCPSenderReport(ssrc: 1, ntpTime: 0, packets: 3), RTCPSenderReport(ssrc: 2, ntpTime: 3_900_000_000.5, packets: 7)])
        #expect(r.streams == [2: .init(sentAt: 3_900_000_000.5, packets: 7)])
        #expect(r.newer(than: SenderReports([2: .init(sentAt: 3_900_000_000, packets: 7)])))
        #expect(!r.newer(than: SenderReports([3: .init(sentAt: 3_800_000_000, packets: 7)])), "a stream only in one is no evidence")
    }
}
