import Foundation
import Testing
import TestSupport

extension MediaScene.RelayCompositeTests {
    /// Lip sync: a publisher whose picture turns from black to white at the very instant its
    /// tone starts (one file, 4 s in, then again each 4 s); in what nginx got of the composite,
    /// the same onsets must be as close: the audio and the video take different paths (the
    /// mixer, or the compositor and x264; AAC encoded in the output). A relay of the one
    /// participant as sent, beside it, and the publisher's own file give the baselines.
    /// Printed; within what ITU-R BT.1359 finds undetectable: audio at most 45 ms early, 125 ms
    /// late. Before frames were stamped with their capture time, the composite's
    /// audio came 225 ms late.
    @Test("A/V sync: a flash and a beep sent together arrive together in the composite (printed)")
    func flashAndBeepStayTogether() async throws {
        let dir = try Scene.tempDirectory("relay-composite-sync")
        let source = try await Self.flashAndBeep(seconds: 20, in: dir)
        let baseline = try await Self.onsets(source)
        let port = try RelayServers.freePort()
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let room = try await Scene.createRoom()
        let url = "rtmp://127.0.0.1:\(port)/live/sync", got = dir.appendingPathComponent("got.flv")
        let relay = try CompositeCase.relay(to: url, room: room, seconds: 22)
        let oneURL = "rtmp://127.0.0.1:\(port)/live/one", gotOne = dir.appendingPathComponent("one.flv")
        let one = try RelayCase.relay(to: oneURL, room: room, seconds: 22)
        try await Task.sleep(for: .seconds(1))
        let player = try CompositeCase.play(source, as: "7:Ann", room: room)
        async let readOne = RelayCase.readBack(oneURL, seconds: 16, to: gotOne)
        let read = await RelayCase.readBack(url, seconds: 16, to: got)
        let ran = await relay.finished()
        _ = await readOne
        _ = await one.finished()
        let single = Self.offsets(try await Self.onsets(gotOne))
        player.signal(SIGKILL)
        await nginx.stop()
        #expect(read, "nothing came back: \(ran.errText.suffix(1500))")
        #expect(ran.status == 0, "relay exited \(ran.status): \(ran.outText) \(ran.errText.suffix(1500))")

        let offsets = Self.offsets(try await Self.onsets(got))
        let base = Self.offsets(baseline)
        func shown(_ list: [Double]) -> String { list.map { String(format: "%+.0f ms", $0 * 1000) }.joined(separator: " ") }
        print("composite A/V sync, audio minus video at each flash: \(shown(offsets)); one participant relayed as sent: \(shown(single)); "
              + "the source file itself: \(shown(base))")
        #expect(offsets.count >= 2 && single.count >= 2, "\(offsets) \(single)")
        let detectable = { (d: Double) in d < -0.045 || d > 0.125 }
        #expect(!offsets.contains(where: detectable), "the composite: \(offsets)")
        #expect(!single.contains(where: detectable), "one participant: \(single)")
    }

    /// Each white flash with the beep nearest it: audio minus video, s. A flash whose beep the
    /// read cut off has none within a second, and is left out.
    static func offsets(_ onsets: (flashes: [Double], beeps: [Double])) -> [Double] {
        onsets.flashes.compactMap { flash in onsets.beeps.min { abs($0 - flash) < abs($1 - flash) }.map { $0 - flash } }.filter { abs($0) < 1 }
    }

    /// `seconds` of 640x360 at 15 fps, black with a white flash of 1 s every 4 s (from 4 s on),
    /// and silence with a 440 Hz beep of 1 s at the same instants.
    static func flashAndBeep(seconds: Int, in dir: URL) async throws -> URL {
        let on = { (t: Double) in t >= 4 && t.truncatingRemainder(dividingBy: 4) < 1 }
        let samples = (0..<(seconds * 48000)).map { i -> Int16 in
            let t = Double(i) / 48000
            return on(t) ? Int16(12000 * sin(2 * .pi * 440 * t)) : 0
        }
        let wav = dir.appendingPathComponent("beeps.wav"), frames = dir.appendingPathComponent("flashes.gray")
        try FaultGapTests.wavData(samples).write(to: wav)
        var gray = Data()
        for n in 0..<(seconds * 15) { gray.append(Data(repeating: on(Double(n) / 15) ? 235 : 16, count: 640 * 360)) }
        try gray.write(to: frames)
        let file = dir.appendingPathComponent("sync.mkv")
        try await runToEnd("""
            matroskamux name=m ! filesink location="\(file.path)"
            filesrc location="\(frames.path)" blocksize=\(640 * 360) ! rawvideoparse format=gray8 width=640 height=360 framerate=15/1
              ! videoconvert ! video/x-raw,format=I420
              ! x264enc tune=zerolatency speed-preset=ultrafast bitrate=300 key-int-max=30 bframes=0 threads=1 sliced-threads=false
              ! video/x-h264,profile=constrained-baseline ! h264parse ! m.
            filesrc location="\(wav.path)" ! wavparse ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=2 ! opusenc ! m.
            """)
        return file
    }

    /// When, in `file`'s own timestamps (s, as ffmpeg presents them for both tracks), the
    /// picture turns white (showinfo: each picture's time and mean luma) and a beep starts
    /// (silencedetect: where a silence ends).
    static func onsets(_ file: URL) async throws -> (flashes: [Double], beeps: [Double]) {
        let video = try await ChildProcess.run("/usr/bin/ffmpeg", ["-hide_banner", "-nostats", "-i", file.path, "-map", "0:v",
                                                                   "-vf", "scale=8:8,format=gray,showinfo", "-f", "null", "-"])
        let pictures = video.errText.split(whereSeparator: \.isNewline).compactMap { line -> (Double, Bool)? in
            guard let m = line.firstMatch(of: /pts_time:([0-9.]+).* mean:\[([0-9]+)/), let t = Double(m.1), let y = Int(m.2) else { return nil }
            return (t, y > 128)
        }
        let flashes = pictures.indices.dropFirst().filter { pictures[$0].1 && !pictures[$0 - 1].1 }.map { pictures[$0].0 }
        let audio = try await ChildProcess.run("/usr/bin/ffmpeg", ["-hide_banner", "-nostats", "-i", file.path, "-map", "0:a",
                                                                   "-af", "silencedetect=noise=-30dB:d=0.3", "-f", "null", "-"])
        let beeps = audio.errText.matches(of: /silence_end: ([0-9.]+)/).compactMap { Double($0.1) }
        guard !pictures.isEmpty else { throw PipelineRunError(message: "no picture in \(file.lastPathComponent): \(video.errText.suffix(500))") }
        return (flashes, beeps)
    }
}
