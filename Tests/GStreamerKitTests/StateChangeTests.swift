@testable import GStreamerKit
import Testing

@Suite struct StateChangeTests {
    init() { GStreamer.initialize() }

    /// The error names the element that refused and carries GStreamer's own reason.
    @Test func aFailedStateChangeReportsTheElementAndGStreamersMessage() throws {
        let pipeline = try Pipeline(description: "fakesrc num-buffers=1 ! filesink name=out location=/nonexistent/dir/x")
        let error = try #require(throws: GStreamerError.self) { try pipeline.setState(.playing) }
        let text = "\(error)"
        #expect(text.contains("'out'"), "\(text)")
        #expect(text.contains("Could not open file \"/nonexistent/dir/x\" for writing"), "\(text)")
        pipeline.setStateQuietly(.null)
    }

    @Test func runToEndReportsTheSameFailure() async throws {
        let pipeline = try Pipeline(description: "fakesrc num-buffers=1 ! filesink name=out location=/nonexistent/dir/x")
        await #expect {
            try await pipeline.runToEnd()
        } throws: { error in
            let text = "\(error)"
            return text.contains("'out'") && text.contains("Could not open file")
        }
    }

    @Test func aStateChangeThatWorksThrowsNothing() throws {
        let pipeline = try Pipeline(description: "fakesrc num-buffers=1 ! fakesink")
        try pipeline.setState(.playing)
        try pipeline.setState(.null)
    }
}
