import Foundation
import GStreamerKit
import Locking
import Logging
import Synchronization

/// Participants coming and going: a slot each (its decoding branches linked to a compositor
/// pad and an audiomixer pad), the layout recomputed at each change. The pad requests, state
/// changes and releases run on a thread of their own, never on Swift's pool.
extension CompositeMixer {
    /// A slot for `participant`, decoding into the composite from now on; a tile of their own if
    /// they publish video. The layout is recomputed (a grid gets one more tile).
    func add(participant: String, display: String, video: Bool) async throws(BotError) -> CompositeSlot {
        try await OffPool.run { [self] () throws(BotError) -> CompositeSlot in
            let n = state.withLock { s in
                s.next += 1
                return s.next
            }
            var made: [(CompositeSlot.Branch, Element)] = []
            do {
                let audio = try branch("relay-composite-audio", source: "audio", name: "slot\(n)-audio", mixer: audioMixer) { bin in
                    guard layout == .speaker else { return [] }
                    // The active speaker: each 20 ms of their decoded audio's level.
                    return [try bin.element(named: "pcm").staticPad("src").addBufferObserver { [weak self] pcm in
                        self?.heard(n, power: ActiveSpeaker.power(ofS16: pcm))
                    }]
                }
                made.append((audio, audioMixer))
                // What the mixer drops of their audio as late is posted, and counted.
                try audio.pad.set("qos-messages", "true")
                losses.watch(audioPad: audio.pad.name)
                let picture = video ? try branch("relay-composite-video", source: "video", name: "slot\(n)-video", mixer: compositor) { _ in [] } : nil
                if let picture {
                    made.append((picture, compositor))
                    // Scaled into its place keeping its aspect ratio; hidden until laid out.
                    try picture.pad.set("sizing-policy", "keep-aspect-ratio")
                    try picture.pad.set("alpha", "0")
                    try picture.pad.set("zorder", String(n))
                }
                let slot = CompositeSlot(number: n, participant: participant, display: display, audio: audio, video: picture,
                                         baseTime: { [pipeline] in pipeline.baseTime }, runningTime: { [pipeline] in pipeline.runningTime }) { [weak self] in
                    self?.opened()
                }
                state.withLock { s in
                    s.list.append(slot)
                    applyLayout(&s)
                }
                return slot
            } catch {
                for (b, mixer) in made { release(b, from: mixer) }
                throw BotError(error)
            }
        }
    }

    /// The participant left: their branches stop and their pads go; the others are laid out
    /// again (a grid closes the gap; the speaker's frame goes to whoever is loudest).
    func remove(_ slot: CompositeSlot) async {
        await OffPool.run { [self] in
            state.withLock { s in
                s.list.removeAll { $0 === slot }
                if s.speaker.removed(slot.number, at: .now) { s.speakerChanges += 1 }
                applyLayout(&s)
            }
            release(slot.audio, from: audioMixer)
            if let video = slot.video { release(video, from: compositor) }
        }
    }

    /// How often the speaker's frame went to someone else.
    var speakerChanges: Int { state.withLock { $0.speakerChanges } }

    /// One slot's decoding branch, linked to a new request pad of `mixer` and started.
    private func branch(_ file: String, source: String, name: String, mixer: Element,
                        probes: (Bin) throws -> [PadProbe]) throws -> CompositeSlot.Branch {
        let bin = try pipeline.addBin(description: try library.description(file), name: name)
        let pad: Pad
        do { pad = try mixer.requestPad("sink_%u") } catch {
            pipeline.remove(bin)
            throw error
        }
        do {
            try bin.staticPad("src").link(to: pad)
            let branch = CompositeSlot.Branch(bin: bin, source: try AppSource(named: source, in: bin), pad: pad, probes: try probes(bin))
            guard bin.syncStateWithParent() else { throw BotError.pipelineFailed("the composite's \(name) did not start") }
            return branch
        } catch {
            pipeline.remove(bin)
            mixer.releaseRequestPad(pad)
            throw error
        }
    }

    /// Stops a branch (its appsrc's thread joined), takes it out and gives its pad back.
    private func release(_ branch: CompositeSlot.Branch, from mixer: Element) {
        for probe in branch.probes { probe.remove() }
        pipeline.remove(branch.bin)
        mixer.releaseRequestPad(branch.pad)
    }

    /// A level from slot `n`'s decoded audio (a streaming thread): the speaker's frame moves
    /// when `ActiveSpeaker` says so.
    private func heard(_ n: Int, power: Double) {
        state.withLock { s in
            guard s.speaker.heard(n, power: power, at: .now) else { return }
            s.speakerChanges += 1
            applyLayout(&s)
        }
    }

    /// Sets every video pad's place: a grid of everyone's tiles in the order they came, or the
    /// active speaker over the whole frame (the others hidden: not scaled, not blended). With
    /// no speaker yet, or one without video, the frame keeps who it showed, else the first.
    func applyLayout(_ s: inout Slots) {
        let pictures = s.list.filter { $0.video != nil }
        var places: [(CompositeSlot, Tile?)]
        switch layout {
        case .grid:
            places = Array(zip(pictures, format.grid(pictures.count).map(Optional.some)))
        case .speaker:
            let speaking = pictures.first { $0.number == s.speaker.current }
            let kept = pictures.first { $0.number == s.shown }
            let shown = speaking ?? kept ?? pictures.first
            if shown?.number != s.shown, let shown { log.info("the frame shows participant \(shown.participant) '\(shown.display)'") }
            s.shown = shown?.number
            places = pictures.map { ($0, $0 === shown ? format.whole : nil) }
        }
        for (slot, tile) in places {
            guard let pad = slot.video?.pad else { continue }
            do {
                if let tile {
                    for (key, value) in [("xpos", tile.x), ("ypos", tile.y), ("width", tile.width), ("height", tile.height)] {
                        try pad.set(key, String(value))
                    }
                }
                try pad.set("alpha", tile == nil ? "0" : "1")
            } catch { log.error("composite: cannot place participant \(slot.participant): \(error)") }
        }
    }
}
