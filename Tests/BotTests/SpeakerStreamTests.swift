import Bot
import Foundation
import Testing

/// `--to ws://…/{participant}` read once and the speaker stream's text messages, without I/O.
@Suite struct SpeakerStreamTests {
    @Test func oneURLPerParticipantWithTheIdAsOneSegment() throws {
        let d = try SpeakerStreamDestination("ws://127.0.0.1:8765/speakers/{participant}?token=s3cret")
        #expect(!d.secure)
        #expect(d.url(for: "1234") == "ws://127.0.0.1:8765/speakers/1234?token=s3cret")
        // An id cannot climb out of its segment or start a query.
        #expect(d.url(for: "a/../b?x") == "ws://127.0.0.1:8765/speakers/a%2F..%2Fb%3Fx?token=s3cret")
        #expect(!d.description.contains("s3cret"))
        #expect(d.description.contains("{participant}"))
        #expect(try SpeakerStreamDestination("wss://example.org/{participant}").secure)
    }

    @Test(arguments: [("http://h/{participant}", "ws:// or wss://"), ("ws://h/speakers", "{participant}"),
                      ("ws:///{participant}", "not a URL"), ("ws://h:70000/{participant}", "out of range")])
    func refused(_ text: String, _ why: String) {
        #expect { try SpeakerStreamDestination(text) } throws: { "\($0)".contains(why) }
    }

    @Test func messages() throws {
        let start = SpeakerStreamMessage.start(participant: "42", display: "Ann \"A\"", audio: .pcm16k, mediaTime: 1.23456)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(start.json.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "start")
        #expect(object["participant"] as? String == "42")
        #expect(object["display"] as? String == "Ann \"A\"")
        #expect(object["sample_rate"] as? Int == 16000)
        #expect(object["channels"] as? Int == 1)
        #expect(object["format"] as? String == "s16le")
        #expect(object["media_time"] as? Double == 1.235)
        #expect(SpeakerStreamMessage.left.json == #"{"type":"left"}"#)
        #expect(SpeakerStreamMessage.muted(true).json == #"{"muted":true,"type":"muted"}"#)
        #expect(SpeakerStreamMessage.speaking(false).json == #"{"speaking":false,"type":"speaking"}"#)
        #expect(SpeakerStreamAudio(rawValue: "48k")?.sampleRate == 48000)
    }

    @Test("a 4-byte Unicode id is one path segment out and in; listening serves the template's paths and its index only")
    func unicodeIdsAndListeningPaths() throws {
        let d = try SpeakerStreamDestination("ws://127.0.0.1:8765/speakers/{participant}?token=t")
        let url = d.url(for: "🎙️Zoë")
        #expect(url.hasPrefix("ws://127.0.0.1:8765/speakers/%F0%9F%8E%99") && url.hasSuffix("?token=t") && !url.dropFirst(5).contains("🎙"), "\(url)")
        let path = String(url.dropFirst("ws://127.0.0.1:8765".count).prefix { $0 != "?" })
        #expect(d.participant(inPath: path) == "🎙️Zoë", "the id a listening relay reads back from \(path)")
        #expect(d.listenAddress?.host == "127.0.0.1" && d.listenAddress?.port == 8765)
        #expect(d.indexPath == "/speakers")
        #expect(d.participant(inPath: "/speakers") == nil && d.participant(inPath: "/speakers/a/b") == nil && d.participant(inPath: "/other/7") == nil)
        #expect(try SpeakerStreamDestination("wss://h/{participant}").listenAddress == nil, "no certificate to serve wss")
    }
}
