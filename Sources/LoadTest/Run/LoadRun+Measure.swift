import Foundation
import FrameCrypto
import GStreamerKit
import Synchronization
import Locking

/// What a load run measures while it runs: webrtcbin statistics, the once-a-second sample,
/// and the per-bot figures written into the records before the bots leave.
extension LoadRun {
    /// Reads every bot's webrtcbin statistics (a few at a time) into the records.
    func statsPass(publishers: [PublisherBot], subscribers: [SubscriberBot]) async {
        var bytesOut: UInt64 = 0, bytesIn: UInt64 = 0, packetsOut: UInt64 = 0, packetsIn: UInt64 = 0, lost: Int64 = 0
        for chunk in stride(from: 0, to: publishers.count, by: 16).map({ Array(publishers[$0..<min($0 + 16, publishers.count)]) }) {
            let results = await withTaskGroup(of: (Int, PublisherStats).self) { group in
                for p in chunk { group.addTask { (p.index, await p.networkStats()) } }
                return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            state.withLock { s in
                for (index, r) in results {
                    if let pair = r.pair { s.records["p\(index)"]?.candidatePair = pair.summary }
                    guard r.packets > 0 else { continue }
                    s.records["p\(index)"]?.packetsSent = r.packets
                    s.records["p\(index)"]?.bytesSent = r.bytes
                    if let rtt = r.rttMs { s.records["p\(index)"]?.rttMs = rtt }
                    if let l = r.lossPercent { s.records["p\(index)"]?.remoteLossPercent = l }
                    if let n = r.throughAgent { s.records["p\(index)"]?.packetsThroughAgent = n }
                }
            }
            for r in results.values { packetsOut += r.packets; bytesOut += r.bytes }
        }
        for chunk in stride(from: 0, to: subscribers.count, by: 16).map({ Array(subscribers[$0..<min($0 + 16, subscribers.count)]) }) {
            let read = await withTaskGroup(of: (Int, (streams: [RTPStreamStats], pair: CandidatePair?)).self) { group in
                for b in chunk { group.addTask { (b.index, await b.networkStats()) } }
                return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            let results = read.mapValues { $0.streams }
            state.withLock { s in
                for (index, r) in read { if let pair = r.pair { s.records["s\(index)"]?.candidatePair = pair.summary } }
                for (index, list) in results where !list.isEmpty {
                    s.inbound["s\(index)"] = list
                    s.records["s\(index)"]?.packetsReceived = list.reduce(0) { $0 + $1.packets }
                    s.records["s\(index)"]?.bytesReceived = list.reduce(0) { $0 + $1.bytes }
                    s.records["s\(index)"]?.packetsLost = list.reduce(0) { $0 + max(0, $1.packetsLost) }
                    let jitters = list.compactMap(\.jitter)
                    if !jitters.isEmpty { s.records["s\(index)"]?.jitterMs = 1000 * jitters.reduce(0, +) / Double(jitters.count) }
                }
            }
            for list in results.values {
                packetsIn += list.reduce(0) { $0 + $1.packets }
                bytesIn += list.reduce(0) { $0 + $1.bytes }
                lost += list.reduce(0) { $0 + max(0, $1.packetsLost) }
            }
        }
        state.withLock { s in
            // Rates since the previous pass (passes also run at the window's edges); counters
            // only grow while the same bots run.
            let now = Date()
            if let last = s.lastPass {
                let seconds = max(0.1, now.timeIntervalSince(last))
                if bytesOut >= s.bytesOut { s.mbpsOut = Double(bytesOut - s.bytesOut) * 8 / 1e6 / seconds }
                if bytesIn >= s.bytesIn { s.mbpsIn = Double(bytesIn - s.bytesIn) * 8 / 1e6 / seconds }
            }
            s.lastPass = now
            let dLost = lost - s.lostIn, dIn = Int64(packetsIn) - Int64(s.packetsIn)
            s.lossPercent = dLost >= 0 && dIn + dLost > 0 ? 100 * Double(dLost) / Double(dIn + dLost) : nil
            (s.bytesOut, s.bytesIn, s.packetsOut, s.packetsIn, s.lostIn) = (bytesOut, bytesIn, packetsOut, packetsIn, lost)
        }
    }

    /// Once a second: counters and the process; every `statsInterval`: webrtcbin statistics.
    func sample(publishers: [PublisherBot], subscribers: [SubscriberBot], started: Date) async {
        var last = ProcessSample.now()
        var nextStats = Date()
        let interval = Double(plan.statsInterval.components.seconds) + Double(plan.statsInterval.components.attoseconds) / 1e18
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            if Date() >= nextStats {
                nextStats = Date().addingTimeInterval(interval)
                await statsPass(publishers: publishers, subscribers: subscribers)
            }
            var comebacks = Comeback()
            for c in await withTaskGroup(of: Comeback.self, body: { group in
                for p in publishers { group.addTask { await p.comeback } }
                for b in subscribers { group.addTask { await b.comeback } }
                return await group.reduce(into: [Comeback]()) { $0.append($1) }
            }) { comebacks.add(c) }
            let now = ProcessSample.now()
            let frames = subscribers.reduce(FrameStats.Snapshot.zero) { $0 + $1.frames }
            let figures = state.withLock { s -> LiveFigures in
                let joined = s.records.values.filter { $0.state == .joined }
                let sample = TimelineSample(
                    t: Date().timeIntervalSince(started),
                    publishersJoined: joined.filter { $0.role == .publisher }.count,
                    subscribersJoined: joined.filter { $0.role == .subscriber }.count,
                    failed: s.records.values.filter { $0.state == .failed }.count,
                    mbpsOut: s.mbpsOut, mbpsIn: s.mbpsIn, lossPercent: s.lossPercent,
                    decryptFailures: frames.droppedTotal, framesOpened: frames.opened,
                    cpuCores: last.flatMap { a in now.map { ProcessSample.cores(from: a, to: $0) } } ?? 0,
                    rssMB: Double(now?.residentBytes ?? 0) / 1_048_576, threads: now?.threads ?? 0)
                s.timeline.append(sample)
                s.comebacks = comebacks
                return LiveFigures(sample: sample, planned: s.records.count, retries: s.retries, phase: s.phase,
                                   packetsSent: s.packetsOut, packetsReceived: s.packetsIn, comebacks: comebacks,
                                   faults: s.faults.reduce(into: [:]) { $0[$1.kind, default: 0] += 1 },
                                   faultsNotRecovered: s.faults.filter { $0.seconds == nil }.count)
            }
            last = now
            onSample(figures)
        }
    }

    /// Frames, phases, lost bots and MOS into the records, before the bots leave.
    func finalizeRecords(publishers: [PublisherBot], subscribers: [SubscriberBot]) {
        for p in publishers {
            let audio = p.audioStats.snapshot, video = p.videoStats.snapshot
            let phases = p.phases, feed = p.feedID, lost = p.lost, keyframes = p.keyframes, nacks = p.nacks
            state.withLock { s in
                guard var r = s.records["p\(p.index)"] else { return }
                r.framesSealed = audio.sealed + video.sealed
                r.sealFailures = audio.sealFailed + video.sealFailed
                r.keyframes = keyframes ?? r.keyframes
                r.nacks = nacks ?? r.nacks
                r.phases = phases
                r.feedID = feed ?? r.feedID
                if r.state == .joined, let lost { r.state = .lost; r.error = lost }
                s.records["p\(p.index)"] = r
            }
        }
        // One-way delay for the E-model: publisher → Janus → subscriber is two hops of about
        // RTT/2 each; the publishers' median RTT to Janus stands for both (subscribers send
        // no RTP, so webrtcbin measures no RTT for them).
        let rtts = state.withLock { $0.records.values.compactMap(\.rttMs) }.sorted()
        let oneWay = rtts.isEmpty ? 0 : rtts[rtts.count / 2]
        let model = EModel()
        for b in subscribers {
            let frames = b.frames, video = b.videoFrames, pictures = b.videoPictures, phases = b.phases, keyframe = b.firstKeyframeSeconds, feeds = b.feedCount, lost = b.lost
            state.withLock { s in
                guard var r = s.records["s\(b.index)"] else { return }
                r.framesReceived = frames.received
                r.framesOpened = frames.opened
                r.videoFramesOpened = video.opened
                r.videoFramesReceived = video.received
                r.videoPicturesDecoded = pictures?.decoded
                r.firstKeyframeSeconds = keyframe
                r.videoPictureSizes = pictures?.sizes
                r.decryptFailures = frames.dropped.filter { $0.value > 0 }
                r.phases = phases
                r.feeds = feeds.subscribed
                r.feedsReceiving = feeds.receiving
                // Loss over the steady window: what a stream lost while it started is not the room's.
                let before = Dictionary((s.inboundAtSteady["s\(b.index)"] ?? []).map { ($0.ssrc, $0) }, uniquingKeysWith: { a, _ in a })
                var windowReceived: UInt64 = 0, windowLost: Int64 = 0
                let scores = (s.inbound["s\(b.index)"] ?? []).map { st -> Double in
                    let received = st.packets &- (before[st.ssrc]?.packets ?? 0)
                    let lost = max(0, st.packetsLost - (before[st.ssrc]?.packetsLost ?? 0))
                    windowReceived += received
                    windowLost += lost
                    let total = Double(received) + Double(lost)
                    let loss = total > 0 ? 100 * Double(lost) / total : 0
                    return model.mos(oneWayDelayMs: oneWay, jitterMs: 1000 * (st.jitter ?? 0), lossPercent: loss)
                }
                if !before.isEmpty {
                    r.steadyPacketsReceived = windowReceived
                    r.steadyPacketsLost = windowLost
                }
                if !scores.isEmpty {
                    r.mos = scores.reduce(0, +) / Double(scores.count)
                    r.mosWorst = scores.min()
                }
                if r.state == .joined, let lost { r.state = .lost; r.error = lost }
                s.records["s\(b.index)"] = r
            }
        }
    }
}
