import Foundation
import GStreamerKit
import Janus
import Logging
import Proof

/// The manifest, written every second and at the end, and the end itself: every file finished
/// (`Finishing`), merged, read back (`RecordingCheck`), the room left.
extension RoomRecording {
    func manifest(ended: Date?) -> RecordingManifest {
        var counters = self.counters
        counters.connectionDrops += sessionCounts.drops
        counters.reclaims += sessionCounts.reclaims
        counters.gapSeconds = gaps.reduce(0) { $0 + ($1.seconds ?? Date().timeIntervalSince($1.start)) }
        let feeds = (finished + branches.liveEntries).sorted { ($0.joined, $0.feedID, $0.kind) < ($1.joined, $1.feedID, $1.kind) }
        var m = RecordingManifest(
            room: config.room, janus: config.janusURL, e2ee: config.protection.isEncrypted, started: started, ended: ended,
            feeds: feeds, timeline: timeline, mix: media?.mix?.file.shown.path ?? mixFile?.shown.path, earlierMixes: earlierMixes,
            errors: branches.errors, gaps: gaps, pauses: pauses.all, reconnection: counters,
            participants: RecordingManifest.participants(of: feeds, recorderGaps: gaps))
        m.candidatePair = candidatePair
        m.recording = proof?.chain.identity.id
        m.frameFormat = config.protection.formatName
        m.receiveDrops = receiveDrops.read ? receiveDrops.earlier + receiveDrops.current : nil
        m.repaired = receiveDrops.read ? unrepaired.repairedEarlier + unrepaired.repaired : nil
        if let since = unrepaired.since {
            let drops = receiveDrops.earlier + receiveDrops.current, lost = unrepaired.earlier + unrepaired.current
            m.errors.append(.init(time: since, error: "the kernel dropped \(drops) packet(s) on the media socket (the recorder fell behind) and \(lost) never arrived, not repaired by retransmission: frames are missing from the files"))
        }
        return m
    }

    func readSessionCounters() async {
        guard let session else { return }
        sessionCounts = (await session.connectionDrops, await session.reclaims)
        // A WebSocket being reconnected (and the session claimed) is a loss too, for the status.
        let open = await session.isOpen
        if state == .recording { status.set(open ? .running : .reconnecting) }
    }

    func writeManifest() {
        let current = manifest(ended: nil)
        status.update(from: current)
        do { try manifestFile.write(current, log: log) } catch { manifestFile.failed(error, log: log) }
    }

    /// Ends every recording cleanly, leaves the room and writes the final manifest. Also while
    /// rejoining: what was recorded before the loss is already finished, and the rejoin stops.
    func finish() async -> RecordingManifest? {
        guard state != .finishing, state != .finished else { return nil }
        // Leaving is announced only on a session that can carry it now: one reconnecting
        // would hold every request for its timeout.
        let sessionOpen = await session?.isOpen ?? false
        let announce = state != .rejoining && sessionOpen
        guard state != .finishing, state != .finished else { return nil }
        state = .finishing
        // The last count of packets lost with kernel drops, before the PeerConnection goes.
        if let peer, receiveDrops.current > 0 { await readUnrepaired(peer) }
        await readRepaired()
        following?.cancel()
        rejoining?.cancel()
        await finishSegments()
        // Publishers who left just before: their files are this manifest's too.
        await takeLeaving()
        if let media, let mix = media.mix { await mix.finish(in: media.pipeline) }
        await peer?.subscription.leave(announce: announce)
        peer?.following.cancel()
        await roster?.leave(announce: announce)
        await readSessionCounters()
        await session?.close()
        await media?.pipeline.stop()
        branches.reset()
        if let last = gaps.indices.last, gaps[last].end == nil { gaps[last].close(cause: nil) }
        state = .finished
        // Every file read back: the manifest says what is on disk.
        let (folder, mix) = (self.folder, mixFile)
        var final = await RecordingCheck(
            library: config.pipelines, directory: folder.access, logger: log,
            mixAccess: { Self.access(ofShown: $0, folder: folder, mix: mix) },
            show: { Self.showing($0, folder: folder, mix: mix) }
        ).check(manifest(ended: Date()))
        final = noteAbsences(final)
        if let proof {
            final = await proof.seal(final, log: log)
            log.info("\(proof.costLine)")
        }
        status.update(from: final)
        do {
            try manifestFile.write(final, log: log)
            return final
        } catch {
            log.error("cannot write manifest.json: \(showing("\(error)"))")
            manifestFile.replaceWithIncomplete(final, error: error, log: log)
            return nil
        }
    }

    /// Every live recording finished (end-of-stream, file closed, tracks merged).
    func finishSegments() async {
        // On the direct path a stream's first packets wait up to 2 s for lip sync: out first.
        if let peer { await peer.webrtc.releaseHeldPackets() }
        let live = branches.detachAll()
        if let media {
            await withTaskGroup(of: Void.self) { group in
                for r in live { group.addTask { await r.finish(in: media.pipeline) } }
            }
        }
        finished += await remux.merge(live.map(\.entry))
        await checkpoint()
    }
}
