import Foundation
import GStreamerKit

/// Janus's RTCP sender reports on one PeerConnection, per SSRC: the NTP time of the latest one
/// and the packets it counts as sent. Janus sends one per stream every second for as long as the
/// PeerConnection lives, whether or not media flows (janus-gateway's ice.c,
/// `janus_ice_outgoing_rtcp_handle`): reports that keep arriving with the same count are Janus
/// there with nothing to send.
struct SenderReports: Sendable, Equatable {
    struct Report: Sendable, Equatable {
        var sentAt: Double
        var packets: UInt64
    }

    var streams: [UInt32: Report]

    init(_ streams: [UInt32: Report]) { self.streams = streams }

    init(_ reports: [RTCPSenderReport]) {
        streams = [:]
        for r in reports where r.ntpTime > 0 { streams[r.ssrc] = Report(sentAt: r.ntpTime, packets: UInt64(r.packets)) }
    }

    /// A stream in both has a newer report here than in `earlier`: one arrived in between.
    func newer(than earlier: SenderReports) -> Bool {
        streams.contains { ssrc, r in earlier.streams[ssrc].map { r.sentAt > $0.sentAt } ?? false }
    }

    /// Packets Janus counts as sent since `earlier`, over the streams in both.
    func sent(since earlier: SenderReports) -> UInt64 {
        streams.reduce(0) { n, entry in
            guard let before = earlier.streams[entry.key], entry.value.packets > before.packets else { return n }
            return n + (entry.value.packets - before.packets)
        }
    }
}

/// One silence on the recorder's PeerConnection (no frame from any feed), judged from the sender
/// reports read while it lasts. Publishers who all stop sending at once (they ended, hung, or
/// were killed and Janus lists them until its timeouts) are not a lost path: while reports keep
/// arriving and count nothing sent since the silence began, nobody sent anything to lose (issue
/// 42: 20 load bots ending together were taken for a lost path, and all of them for lost). Fail
/// closed otherwise: no report for `fresh` seconds, reports counting packets that never
/// arrived, or no reports at all, past the timeout, is a lost path. No clock of its own.
struct SilenceWatch: Sendable {
    enum Verdict: Sendable, Equatable {
        /// Not silent for the timeout yet.
        case wait
        /// Past the timeout, and Janus's reports say the path works and nothing was sent.
        case quiet
        /// The path is lost since `since` (the newest frame, or the last read after which a
        /// report still arrived); `why` is the gap's cause.
        case lost(since: Date, why: String)
    }

    /// Reports are read once the newest frame is this old (seconds).
    static let readAfter: TimeInterval = 1
    /// Janus reports every second: this long (seconds) without a newer one is no report.
    static let fresh: TimeInterval = 3

    /// Which PeerConnection of the recording.
    let peer: Int
    /// The newest frame when the silence was noticed: when it began.
    let began: Date
    /// The recorder said once that the silence is not a loss.
    var toldQuiet = false
    /// When the stats read in flight began (the recorder's; at most one at a time).
    var readingSince: Date?
    private var last: (reports: SenderReports, at: Date)?
    /// The first reports that arrived during the silence: packets counted past them were sent
    /// during it.
    private var baseline: SenderReports?
    /// A read after which a report still arrived: the path worked until then at least.
    private(set) var aliveAt: Date?

    init(peer: Int, began: Date) {
        self.peer = peer
        self.began = began
    }

    /// One read (`reports` nil: it failed) at `now`; `timeout`: seconds of silence that make a
    /// lost path unless the reports say otherwise.
    mutating func judge(_ reports: SenderReports?, at now: Date, timeout: TimeInterval) -> Verdict {
        if let reports {
            if let last, reports.newer(than: last.reports) {
                aliveAt = last.at
                if baseline == nil { baseline = reports }
            }
            last = (reports, now)
        }
        let silent = now.timeIntervalSince(began)
        guard silent >= timeout else { return .wait }
        let cause = "no media for \(String(format: "%.1f", silent)) s"
        if let baseline, let reports = last?.reports, case let sent = reports.sent(since: baseline), sent > 0 {
            return .lost(since: began, why: "\(cause) while Janus's RTCP sender reports count \(sent) packet(s) sent to the recorder")
        }
        if let aliveAt, now.timeIntervalSince(aliveAt) <= Self.fresh { return .quiet }
        return .lost(since: aliveAt ?? began, why: cause)
    }
}
