import Foundation
import GStreamerKit
import Janus
import Logging

/// Media that stopped on the current PeerConnection: a lost path (ICE, a stalled Janus, UDP cut)
/// or publishers who all stopped sending at once. Every half second from `follow(for:)`.
extension RoomRecording {
    /// A read of webrtcbin's stats not answered in this long (seconds) counts as no report:
    /// its thread may be busy negotiating, and a check that waited would never see a loss.
    static let statsPatience: TimeInterval = 2

    /// No frame from any feed for `mediaLossTimeout`, with a publisher Janus still lists being
    /// recorded, is a lost path unless Janus's RTCP sender reports still arrive and count
    /// nothing sent since (`SilenceWatch`): then the publishers are silent and nothing of theirs
    /// is lost. A lost path's outage began at its newest frame, or at the last read after which
    /// a report arrived.
    func checkMediaFlow() async {
        guard state == .recording, let peer, let roster else { return endSilence() }
        // Departures Janus announced count at once, not when their files are finished (one at a
        // time: 20 publishers leaving together took the recorder 5 s and more).
        let present = Set(await roster.current.map(\.id))
        guard state == .recording, self.peer?.number == peer.number, branches.recordsAny(of: present),
              let newest = branches.newestFrame, Date().timeIntervalSince(newest) >= SilenceWatch.readAfter else { return endSilence() }
        // A feed that left takes its newest frame along; the silence still began at the later one.
        if !(silence.map { $0.peer == peer.number && newest <= $0.began } ?? false) {
            endSilence()
            silence = SilenceWatch(peer: peer.number, began: newest)
        }
        guard var watch = silence else { return }
        if let since = watch.readingSince {
            // Judged without a report while the read does not answer (none is started meanwhile).
            guard Date().timeIntervalSince(since) >= Self.statsPatience else { return }
            let verdict = watch.judge(nil, at: Date(), timeout: config.mediaLossTimeout.seconds)
            return judged(watch, verdict)
        }
        watch.readingSince = Date()
        silence = watch
        let webrtc = peer.webrtc, number = peer.number, began = watch.began
        Task { [weak self] in
            let reports = await webrtc.senderReports()
            await self?.reportsRead(reports.map(SenderReports.init), peer: number, began: began)
        }
    }

    private func reportsRead(_ reports: SenderReports?, peer number: Int, began: Date) {
        guard state == .recording, peer?.number == number, var watch = silence, watch.peer == number, watch.began == began else { return }
        watch.readingSince = nil
        log.trace("silent for \(String(format: "%.1f", Date().timeIntervalSince(began))) s: \(reports.map { "\($0.streams.count) sender report(s), the newest from \(String(format: "%.3f", $0.streams.values.map(\.sentAt).max() ?? 0))" } ?? "no sender reports read")")
        let verdict = watch.judge(reports, at: Date(), timeout: config.mediaLossTimeout.seconds)
        judged(watch, verdict)
    }

    private func judged(_ judgedWatch: SilenceWatch, _ verdict: SilenceWatch.Verdict) {
        var watch = judgedWatch
        switch verdict {
        case .wait:
            silence = watch
        case .quiet:
            if !watch.toldQuiet {
                watch.toldQuiet = true
                let present = presence.present.count
                log.info("no media for \(String(format: "%.1f", Date().timeIntervalSince(watch.began))) s from the \(present) publisher(s) in the room, and Janus's RTCP sender reports still arrive counting nothing sent: they are silent, the media path works (not a loss)")
            }
            silence = watch
        case .lost(let since, let cause):
            silence = nil
            // A relayed path whose TURN credentials expired: said so, and fetched anew before coming back.
            if case .turnFailed(let why?) = config.explain(.mediaLost) {
                startRejoin("\(cause): \(why)", rejoinSession: false, since: since, refreshTURN: true)
            } else {
                startRejoin(cause, rejoinSession: false, since: since)
            }
        }
    }

    /// Media flows again (or nobody is there to hear): the watch ends, said so if it had said
    /// the publishers were silent.
    private func endSilence() {
        guard let watch = silence else { return }
        silence = nil
        if watch.toldQuiet, let newest = branches.newestFrame, newest > watch.began {
            log.info("media again after \(String(format: "%.1f", newest.timeIntervalSince(watch.began))) s of silence")
        }
    }
}
