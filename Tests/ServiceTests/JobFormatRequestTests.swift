import Bot
import FrameCrypto
import Foundation
@testable import Service
import Testing

/// A job's `format` and `keys`, parsed and checked with no I/O: the CLI's defaults and checks
/// (one `FrameFormatSettings` for both), every refusal naming its field, keys never in a message.
@Suite struct JobFormatRequestTests {
    static let material = String(repeating: "a7", count: 20)

    static func parse(_ object: [String: Any], _ kind: JobSpec.Kind = .recording) throws(RequestProblem) -> JobSpec {
        var o = object
        o["room"] = o["room"] ?? 1
        if kind == .recording { o["out"] = o["out"] ?? "rec" } else { o["file"] = o["file"] ?? "tone.opus" }
        return try JobSpec.parse(try! JSONSerialization.data(withJSONObject: o), kind: kind)
    }

    static func refusal(_ object: [String: Any], _ kind: JobSpec.Kind = .recording) -> RequestProblem? {
        do { _ = try parse(object, kind); return nil } catch { return error }
    }

    @Test("framecryptor: the CLI's defaults, key material of any length, per-participant keys; the format persisted as given")
    func frameCryptorJob() throws {
        let spec = try Self.parse(["format": ["frame": "framecryptor", "ratchetSalt": "PQSRTCFrameEncryptionSalt", "magicBytes": "PQSRTCMagicBytes"],
                                   "key": ["hex": Self.material],
                                   "keys": [["participant": "alice", "index": 1, "key": "00ff"], ["participant": "bob", "index": 0, "key": Self.material]]])
        let format = try #require(spec.format)
        #expect(format.frame == .framecryptor && format.ratchetWindow == 8 && format.keyRingSize == 16 && format.keyIndex == 0 && format.keyWaitSeconds == 2)
        let rule = try format.checked(naming: \.rawValue).participantIDs
        #expect(format.participantId == nil && rule == .displayPrefix)
        let byDisplay = try #require(try Self.parse(["format": ["frame": "sframe", "participantId": "display"]]).format)
        let displayRule = try byDisplay.checked(naming: \.rawValue).participantIDs
        #expect(displayRule == .display)
        #expect(spec.key == .hex(Self.material))
        #expect(spec.keys?.map(\.participant) == ["alice", "bob"] && spec.keys?.map(\.index) == [1, 0])
        let choice = try format.checked(naming: \.rawValue)
        #expect(choice.frameCryptor == FrameCryptorOptions.pqsrtc && choice.sealingIndex == 0)
        // Persisted (state folder, database) and read back the same.
        let back = try JSONDecoder().decode(JobSpec.self, from: JSONEncoder().encode(spec))
        #expect(back == spec)
    }

    @Test("no key at all is a framecryptor or sframe job whose keys come later; an ECall job still needs its 64-hex key")
    func keysMayComeLater() throws {
        let spec = try Self.parse(["format": ["frame": "sframe", "sframeKid": 7]])
        #expect(spec.key == .none && spec.frameFormat == .sframe && spec.format?.sframeKid == 7)
        #expect(try Self.parse(["format": ["frame": "sframe"]]).format?.checked(naming: \.rawValue).sharedIndex == 0)
        #expect(Self.refusal([:])?.message.hasPrefix("key:") == true)
        #expect(Self.refusal(["key": ["hex": "00ff"]])?.message.contains("64 hex") == true, "ECall keeps its 32-byte key")
        let ecall = try Self.parse(["key": ["hex": String(repeating: "5a", count: 32)], "format": ["frame": "ecall"]])
        #expect(ecall.frameFormat == .ecall)
    }

    @Test("each bad format field or key is a 400 naming format.<field> or keys[i].<field>, as the CLI refuses it")
    func refusals() {
        let fc: [String: Any] = ["frame": "framecryptor", "ratchetSalt": "salt"]
        func with(_ extra: [String: Any]) -> [String: Any] { fc.merging(extra) { $1 } }
        let cases: [([String: Any], String)] = [
            (["format": ["frame": "framecryptor"]], "format.ratchetSalt"),
            (["format": ["frame": "dtls"]], "format.frame"),
            (["format": "framecryptor"], "format"),
            (["format": with(["ratchetWindow": 65])], "format.ratchetWindow"),
            (["format": with(["ratchetWindow": -1])], "format.ratchetWindow"),
            (["format": with(["keyRingSize": 0])], "format.keyRingSize"),
            (["format": with(["keyIndex": 16])], "format.keyIndex"),
            (["format": with(["keyWaitSeconds": -1])], "format.keyWaitSeconds"),
            (["format": with(["ratchetSalt": "hex:abc"])], "format.ratchetSalt"),
            (["format": with(["magicBytes": 5])], "format.magicBytes"),
            (["format": with(["colour": "red"])], "format.colour"),
            (["format": with(["participantId": "msid"])], "format.participantId"),
            (["format": ["frame": "ecall", "participantId": "display"], "key": ["hex": String(repeating: "5a", count: 32)]], "format.participantId"),
            (["format": ["frame": "sframe", "sframeSuite": "AES_999"]], "format.sframeSuite"),
            (["format": ["frame": "ecall", "ratchetSalt": "x"], "key": ["none": true]], "format.ratchetSalt"),
            (["format": fc, "key": ["none": true]], "key.none"),
            (["format": fc, "key": ["hex": "abc"]], "key.hex"),
            (["format": fc, "keys": [["participant": "a", "index": 16, "key": "00"]]], "keys[0].index"),
            (["format": fc, "keys": [["participant": "", "index": 0, "key": "00"]]], "keys[0].participant"),
            (["format": fc, "keys": [["participant": "a", "index": 0, "key": "0g"]]], "keys[0].key"),
            (["format": fc, "keys": [["participant": "a", "index": 0, "key": "00", "extra": 1]]], "keys[0].extra"),
            (["format": fc, "keys": [["participant": "a", "index": 0, "key": "00"], ["participant": "a", "index": 0, "key": "01"]]], "keys[1]"),
            (["format": fc, "keys": "a:00"], "keys"),
            (["key": ["hex": String(repeating: "5a", count: 32)], "keys": [["participant": "a", "index": 0, "key": "00"]]], "keys"),
        ]
        for (body, field) in cases {
            let problem = Self.refusal(body)
            let message = problem?.message ?? ""
            #expect(problem?.status == 400 && (message.hasPrefix(field + " ") || message.hasPrefix(field + ":")), "\(body): \(String(describing: problem))")
            #expect(problem?.message.contains("a7a7") != true)
        }
    }

    @Test("the CLI's names and the API's for one check: the same rule, each message in its caller's words")
    func oneCheckTwoNamings() {
        var s = FrameFormatSettings()
        s.frame = .framecryptor
        s.ratchetSalt = "salt"
        s.keyIndex = 4
        s.keyRingSize = 4
        let cli = problem(s, \.option)
        let api = problem(s) { "format.\($0.rawValue)" }
        #expect(cli?.field == .keyIndex && cli?.message == "--key-index takes 0 to 3 (--key-ring-size 4), got 4", "\(String(describing: cli))")
        #expect(api?.message == "format.keyIndex takes 0 to 3 (format.keyRingSize 4), got 4", "\(String(describing: api))")
        #expect(FrameFormatSettings.Field.keyWaitSeconds.option == "--key-wait" && FrameFormatSettings.Field.sframeKid.option == "--sframe-kid")
        s.keyIndex = 3
        s.ratchetSalt = "hex:000102030405060708"
        #expect((try? s.checked(naming: \.option))?.frameCryptor?.ratchetSalt == Array(0...8))
    }

    private func problem(_ s: FrameFormatSettings, _ name: (FrameFormatSettings.Field) -> String) -> FormatProblem? {
        do { _ = try s.checked(naming: name); return nil } catch { return error }
    }

    @Test("a playback seals as the participant its display names, with its key at format.keyIndex")
    func playbackSender() throws {
        let spec = try Self.parse(["format": ["frame": "framecryptor", "ratchetSalt": "s", "keyIndex": 2], "display": "alice:Alice",
                                   "keys": [["participant": "alice", "index": 2, "key": Self.material]]], .playback)
        #expect(spec.keys?.first?.index == 2 && spec.format?.keyIndex == 2 && spec.display == "alice:Alice")
    }

    @Test("docs/openapi.json's FrameFormat has exactly the fields a format takes, and the suites SFrame has")
    func documentNamesEveryField() throws {
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        let schemas = try #require((doc["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let format = try #require((schemas["FrameFormat"] as? [String: Any])?["properties"] as? [String: Any])
        #expect(Set(format.keys) == Set(FrameFormatSettings.Field.allCases.map(\.rawValue)))
        let suites = try #require((format["sframeSuite"] as? [String: Any])?["enum"] as? [String])
        #expect(Set(suites) == Set(SFrameSuite.allCases.map(\.name)))
        for request in ["RecordingRequest", "PlaybackRequest", "RelayRequest"] {
            let r = try #require(schemas[request] as? [String: Any])
            #expect((r["properties"] as? [String: Any])?["format"] != nil && (r["required"] as? [String])?.contains("key") == false, "\(request)")
        }
    }
}
