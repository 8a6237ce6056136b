@testable import Bot
import Testing

/// Which H.264 files are sent without re-encoding (ECALL-WIRE §3: 42e01f / 640c1f).
struct RoomVideoCodecTests {
    @Test(arguments: [
        ("video/x-h264, stream-format=(string)avc, level=(string)2.2, profile=(string)constrained-baseline, width=(int)640", true),
        ("video/x-h264, level=(string)3.1, profile=(string)constrained-high", true),
        ("video/x-h264, level=(string)3.1, profile=(string)high", false),
        ("video/x-h264, level=(string)4, profile=(string)constrained-baseline", false),
        ("video/x-h264, level=(string)3, profile=(string)main", false),
        ("video/x-h264, profile=(string)constrained-baseline", false),
        ("video/x-h265, level=(string)3.1, profile=(string)main", false),
        // `base-profile` is not `profile`.
        ("video/x-h264, level=(string)3, base-profile=(string)constrained-baseline, profile=(string)high", false),
    ])
    func acceptsOnlyTheRoomsProfilesAtLevel31OrLower(caps: String, asIs: Bool) {
        #expect(RoomVideoCodec.acceptsAsIs(caps) == asIs)
    }
}
