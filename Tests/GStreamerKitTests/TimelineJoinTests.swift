import GStreamerKit
import Testing

/// The join of restarted timelines, as pure state: what two MPEG-TS files concatenated look like
/// at decodebin's pads (measured: audio 0.78…3.81 s, then 0.81…3.8 s again; no new segment).
@Suite struct TimelineJoinTests {
    let ms: UInt64 = 1_000_000

    @Test("a restart is placed right after the furthest end reached, and audio and video take the same offset")
    func restartIsJoinedForEveryStream() {
        var join = TimelineJoin()
        let audio = 1, video = 2
        var mapped: [(Int, UInt64)] = []
        // First file: audio 20 ms frames 780…3800 ms, video 40 ms frames lagging behind.
        for t in stride(from: UInt64(780), through: 3780, by: 20) { mapped.append((audio, t * ms + UInt64(join.map(stream: audio, pts: t * ms, duration: 20 * ms)))) }
        for t in stride(from: UInt64(780), through: 3700, by: 40) { mapped.append((video, t * ms + UInt64(join.map(stream: video, pts: t * ms, duration: 40 * ms)))) }
        // Second file, audio first (it restarts at 810), then the video's rest and its restart.
        let a2 = join.map(stream: audio, pts: 810 * ms, duration: 20 * ms)
        #expect(a2 == Int64(3800 - 810) * Int64(ms), "right after the audio's end at 3.8 s")
        #expect(join.map(stream: video, pts: 3740 * ms, duration: 40 * ms) == 0, "the first file's last pictures keep their times")
        #expect(join.map(stream: video, pts: 780 * ms, duration: 40 * ms) == a2, "the same offset for the video")
        #expect(join.joined == 1)
        #expect(join.map(stream: audio, pts: 830 * ms, duration: 20 * ms) == a2)
    }

    @Test("B-frame reordering (less than 0.5 s back) is no restart; a segment or flush starts over")
    func reorderingAndResets() {
        var join = TimelineJoin()
        #expect(join.map(stream: 1, pts: 1000 * ms, duration: nil) == 0)
        #expect(join.map(stream: 1, pts: 920 * ms, duration: nil) == 0)
        #expect(join.joined == 0)
        #expect(join.map(stream: 1, pts: 100 * ms, duration: nil) > 0)
        join.reset()
        // A seek back to 0 (the player's start, a loop) is no restart to join.
        #expect(join.map(stream: 1, pts: 0, duration: nil) == 0)
        #expect(join.joined == 0)
    }
}
