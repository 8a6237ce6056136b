import Foundation
import GStreamerKit
import Testing
import TestSupport

extension MediaScene {
    /// `sfubot relay --to rtmp://…` without `--participant`: the whole room composed and encoded
    /// once, sent to a real nginx-rtmp started here, read back with ffmpeg/ffprobe. Two `sfubot
    /// play` publishers, each a picture of one colour and a tone of their own.
    @Suite(.enabled(if: RelayServers.missing == nil, "\(RelayServers.missing ?? "")")) struct RelayCompositeTests {
        @Test("grid: one 1280x720 H.264 stream, Ann's red tile left and Bob's blue right, both tones; Bob leaves and the same stream goes on with Ann alone; a wrong key sends nothing; CPU printed")
        func gridOfTwoThenOneLeaves() async throws {
            let dir = try Scene.tempDirectory("relay-composite-grid")
            let ann = try await CompositeCase.publisherFile("red", tone: 440, seconds: 26, in: dir)
            let bob = try await CompositeCase.publisherFile("blue", tone: 660, seconds: 10, in: dir)
            let port = try RelayServers.freePort()
            let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
            let room = try await Scene.createRoom()
            let (url, wrongURL) = ("rtmp://127.0.0.1:\(port)/live/grid", "rtmp://127.0.0.1:\(port)/live/wrong")
            let relay = try CompositeCase.relay(to: url, room: room, seconds: 26)
            let wrong = try CompositeCase.relay(to: wrongURL, room: room, seconds: 20, key: RelayCase.otherKey)
            let (got, gotWrong) = (dir.appendingPathComponent("got.flv"), dir.appendingPathComponent("wrong.flv"))
            try await Task.sleep(for: .seconds(1))
            let players = [try CompositeCase.play(ann, as: "7:Ann", room: room)]
            async let read = RelayCase.readBack(url, seconds: 18, to: got)
            // The wrong key's stream is looked for while both publish: it never exists.
            async let readWrong = RelayCase.readBack(wrongURL, seconds: 2, to: gotWrong, within: 12)
            try await Task.sleep(for: .seconds(2))
            let bobPlayer = try CompositeCase.play(bob, as: "8:Bob", room: room)
            // The relay's CPU while it composes both (Bob's file lasts 10 s).
            try await Task.sleep(for: .seconds(3))
            let (cpu0, wall0) = (CompositeCase.cpuSeconds(relay.pid), ContinuousClock.now)
            try await Task.sleep(for: .seconds(6))
            let (cpu1, wall1) = (CompositeCase.cpuSeconds(relay.pid), ContinuousClock.now)
            let (wasRead, wrongWasRead) = (await read, await readWrong)
            let (ran, ranWrong) = (await relay.finished(), await wrong.finished())
            let bobRan = await bobPlayer.finished()
            for p in players { p.signal(SIGKILL) }
            await nginx.stop()

            if let cpu0, let cpu1 {
                let wall = (wall1 - wall0).inSeconds
                print(String(format: "composite relay CPU, 2 participants, grid 1280x720 at 25 fps: %.0f %% of one core (%.2f s of CPU in %.1f s)",
                             (cpu1 - cpu0) / wall * 100, cpu1 - cpu0, wall))
            }
            print(ran.outText.split(whereSeparator: \.isNewline).first { $0.hasPrefix("composite losses") } ?? "no losses line")
            #expect(wasRead, "nothing came back from nginx: \(ran.errText.suffix(1500))")
            #expect(ran.status == 0, "relay exited \(ran.status): \(ran.outText) \(ran.errText.suffix(1500))")
            #expect(bobRan.status == 0, "Bob's play: \(bobRan.errText.suffix(800))")
            #expect(ran.outText.contains("composed 2 participant(s)"), "\(ran.outText)")
            let c = RelayCase.counters(ran.outText)
            #expect(c.outputs == 1 && c.failures == 0 && c.dropped == 0 && c.relayedVideo > 400, "one connection throughout: \(ran.outText)")
            // The output's start asked the encoder for a keyframe (its own come every 50 pictures).
            let waited = ran.outText.firstMatch(of: /video before the output's first keyframe: ([0-9]+)/).flatMap { Int($0.1) }
            #expect(waited.map { $0 <= 10 } == true, "pictures before the first keyframe: \(ran.outText)")

            let streams = try await RelayCase.probe(got)
            let video = try #require(streams.video, "no video in what came back")
            #expect(video.codec == "h264" && video.width == 1280 && video.height == 720, "\(video)")
            #expect(streams.audio?.codec == "aac" && streams.audio?.rate == 48000, "\(String(describing: streams.audio))")
            #expect(streams.duration >= 16, "\(streams.duration) s came back in one connection")
            let runs = try await Pictures.runs(got)
            #expect(runs.count == 1 && runs.first.map { $0.width == 1280 && $0.height == 720 && $0.count >= 16 * 22 } == true, "\(runs)")
            #expect(try await RelayCase.parameterSets(got).idr >= 8, "a keyframe at least every 2 s")

            // Ann (red) alone, then Ann left of Bob (blue), then Ann alone again after Bob left.
            let pictures = try await CompositeCase.pictures(got)
            let both = pictures.filter { $0.left == .red && $0.right == .blue }
            let annAlone = pictures.filter { $0.left == .red && $0.right == .red && $0.centre == .red }
            #expect(both.count >= 10, "pictures with Ann left and Bob right: \(both.count) of \(pictures.count)")
            #expect(pictures.suffix(6).allSatisfy { $0.left == .red && $0.right == .red }, "after Bob left: \(pictures.suffix(6))")
            #expect(annAlone.contains { a in both.contains { $0.at < a.at } }, "Ann alone after both")

            // Both tones while both publish; Ann's alone at the end.
            let tones = CompositeCase.tones(try await RelayCase.audioSamples(got), [440, 660])
            #expect(tones.contains([440, 660]), "seconds with both tones: \(tones)")
            #expect(tones.suffix(3).allSatisfy { $0 == [440] }, "the last seconds: \(tones.suffix(3))")

            // The wrong key: every frame a counted drop, the destination never connected to.
            #expect(!wrongWasRead, "a stream came from the wrong-key relay")
            #expect(ranWrong.status == 0 && ranWrong.outText.contains("outputs started: 0"), "\(ranWrong.outText) \(ranWrong.errText.suffix(1000))")
            #expect(ranWrong.outText.contains("no frame opened"), "\(ranWrong.outText)")
            #expect(RelayCase.counters(ranWrong.outText).dropped > 300, "\(ranWrong.outText)")
        }

        @Test("--layout speaker, over SRT: Ann's picture fills the frame while she speaks; Bob, whose tone starts later, takes it over once, for good")
        func activeSpeakerTakesTheFrame() async throws {
            let dir = try Scene.tempDirectory("relay-composite-speaker")
            let ann = try await CompositeCase.publisherFile("red", tone: 440, from: 0.5, to: 7, seconds: 22, in: dir)
            let bob = try await CompositeCase.publisherFile("blue", tone: 660, from: 9, seconds: 22, in: dir)
            let (port, readPort) = (try RelayServers.freePort(), try RelayServers.freePort())
            let server = try await RelayServers.srt(port: port, readPort: readPort)
            let room = try await Scene.createRoom()
            let relay = try CompositeCase.relay(to: "srt://127.0.0.1:\(port)", room: room, seconds: 24, ["--layout", "speaker", "--size", "960x540"])
            try await Task.sleep(for: .seconds(1))
            var players = [try CompositeCase.play(ann, as: "7:Ann", room: room)]
            let got = dir.appendingPathComponent("got.ts")
            async let read = RelayCase.readBack("srt://127.0.0.1:\(readPort)", seconds: 18, to: got)
            try await Task.sleep(for: .seconds(1.5))
            players.append(try CompositeCase.play(bob, as: "8:Bob", room: room))
            let wasRead = await read
            let ran = await relay.finished()
            for p in players { p.signal(SIGKILL) }
            await server.stop()

            #expect(wasRead, "nothing came back from srt-live-transmit: \(ran.errText.suffix(1500))")
            #expect(ran.status == 0, "relay exited \(ran.status): \(ran.outText) \(ran.errText.suffix(1500))")
            let streams = try await RelayCase.probe(got)
            #expect(streams.video.map { $0.codec == "h264" && $0.width == 960 && $0.height == 540 } == true, "\(String(describing: streams.video))")
            #expect(streams.audio?.codec == "aac", "\(String(describing: streams.audio))")
            // The centre's colour over time, runs of one colour: red (Ann), then blue (Bob), once.
            let pictures = try await CompositeCase.pictures(got)
            var runs: [CompositeCase.Colour] = []
            for p in pictures where (p.centre == .red || p.centre == .blue) && runs.last != p.centre { runs.append(p.centre) }
            #expect(runs == [.red, .blue], "the frame showed \(runs) (\(pictures.map(\.centre.rawValue)))")
            #expect(pictures.filter { $0.centre == .blue }.allSatisfy { $0.left == .blue && $0.right == .blue }, "Bob's picture fills the frame")
            let line = ran.outText.split(whereSeparator: \.isNewline).first { $0.hasPrefix("composed") }.map(String.init) ?? ""
            print("relay: \(line)")
            #expect(line.contains("speaker layout, 960x540 at 25 fps"), "\(ran.outText)")
        }

        @Test("a gap (all of a Janus's media cut for 3 s): the same stream goes on, Ann's picture held through it, silence, then her tone again")
        func aGapHoldsThePictureAndIsSilent() async throws {
            let dir = try Scene.tempDirectory("relay-composite-gap")
            let ann = try await CompositeCase.publisherFile("red", tone: 440, seconds: 24, in: dir)
            let port = try RelayServers.freePort()
            let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
            let (url, got) = ("rtmp://127.0.0.1:\(port)/live/gap", dir.appendingPathComponent("got.flv"))
            let (wasRead, ran, drop) = try await OwnJanus.with(port: 8262, in: dir, rtpPorts: 15200...15299) { janus in
                let room = try await Scene.createPermanentRoom(janus.url)
                let relay = try SfubotProcess.start(["relay", "--janus", janus.url, "--room", "\(room)", "--key-hex", RelayCase.key, "--to", url, "--duration", "20"])
                try await Task.sleep(for: .seconds(1))
                let player = try SfubotProcess.start(["play", ann.path, "--janus", janus.url, "--room", "\(room)", "--key-hex", RelayCase.key, "--display", "7:Ann"])
                defer { player.signal(SIGKILL) }
                async let read = RelayCase.readBack(url, seconds: 15, to: got)
                try await Task.sleep(for: .seconds(6))
                let drop = try await Faults.dropUDP(ports: janus.rtpPorts, for: .seconds(3))
                return (await read, await relay.finished(), drop)
            }
            await nginx.stop()
            #expect(wasRead, "nothing came back from nginx: \(ran.errText.suffix(1500))")
            #expect(drop.packets > 100, "media was flowing and was cut: \(drop.packets) packets")
            #expect(ran.status == 0, "relay exited \(ran.status): \(ran.outText) \(ran.errText.suffix(1500))")
            let c = RelayCase.counters(ran.outText)
            #expect(c.outputs == 1 && c.failures == 0, "one connection throughout: \(ran.outText)")
            #expect(try await RelayCase.probe(got).duration >= 13, "the stream went on through the gap")
            // Ann fills the frame from her first picture to the end: held, never black, in the gap.
            let pictures = try await CompositeCase.pictures(got).drop { $0.centre != .red }
            #expect(pictures.count >= 24 && pictures.allSatisfy { $0.centre == .red && $0.left == .red }, "\(pictures.map(\.centre.rawValue))")
            // Her tone, then silent seconds (the gap), then her tone again.
            let tones = CompositeCase.tones(try await RelayCase.audioSamples(got), [440])
            let silent = tones.indices.filter { tones[$0].isEmpty }
            #expect(silent.count >= 2 && tones.prefix(silent.first ?? 0).contains([440]) && tones.suffix(3).allSatisfy { $0 == [440] }, "\(tones)")
        }
    }
}
