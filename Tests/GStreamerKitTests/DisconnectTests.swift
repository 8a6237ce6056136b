import CGStreamer
@testable import GStreamerKit
import Synchronization
import Testing

/// Probes and signal connections are tokens: once removed, the callback never runs again and
/// its captured state is released (GLib's destroy notify).
@Suite struct DisconnectTests {
    init() { GStreamer.initialize() }

    @Test func aRemovedPadProbeNoLongerFires() throws {
        // A src pad of no element, active and unlinked: gst_pad_push runs its probes in this
        // thread, then answers not-linked. No streaming thread, nothing to wait for.
        let pad = Pad(takingOwnership: try #require(gst_pad_new("src", GST_PAD_SRC)))
        #expect(gst_pad_set_active(pad.pointer, 1) != 0)
        var segment = GstSegment()
        gst_segment_init(&segment, GST_FORMAT_TIME)
        gst_pad_push_event(pad.pointer, gst_event_new_stream_start("probe-test"))
        gst_pad_push_event(pad.pointer, gst_event_new_segment(&segment))
        let counter = Counter()
        weak let captured = counter
        let probe = pad.addBufferObserver { [counter] _ in counter.fired.add(1, ordering: .relaxed) }
        push(pad)
        #expect(counter.fired.load(ordering: .relaxed) == 1)
        probe.remove()
        push(pad)
        push(pad)
        #expect(counter.fired.load(ordering: .relaxed) == 1)
        probe.remove()  // a second remove does nothing
        _ = consume counter
        #expect(captured == nil)  // the closure was released with the probe
    }

    @Test func aDisconnectedSignalNoLongerFires() throws {
        let element = try Element(factory: "identity")
        let counter = Counter()
        weak let captured = counter
        typealias Notify = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let handler: Notify = { _, _, data in
            Unmanaged<Counter>.fromOpaque(data!).takeUnretainedValue().fired.add(1, ordering: .relaxed)
        }
        let release: GClosureNotify = { data, _ in if let data { Unmanaged<Counter>.fromOpaque(data).release() } }
        let connection = SignalConnection(element, signal: "notify::silent", handler: unsafeBitCast(handler, to: GCallback.self),
                                          data: Unmanaged.passRetained(counter).toOpaque(), release: release)
        try element.set("silent", true)
        #expect(counter.fired.load(ordering: .relaxed) == 1)
        connection.disconnect()
        try element.set("silent", false)
        try element.set("silent", true)
        #expect(counter.fired.load(ordering: .relaxed) == 1)
        _ = consume counter
        #expect(captured == nil)  // GLib ran the destroy notify
    }

    @Test func droppingTheConnectionDisconnectsIt() throws {
        let element = try Element(factory: "identity")
        let counter = Counter()
        typealias Notify = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let handler: Notify = { _, _, data in
            Unmanaged<Counter>.fromOpaque(data!).takeUnretainedValue().fired.add(1, ordering: .relaxed)
        }
        let release: GClosureNotify = { data, _ in if let data { Unmanaged<Counter>.fromOpaque(data).release() } }
        do {
            let connection = SignalConnection(element, signal: "notify::silent", handler: unsafeBitCast(handler, to: GCallback.self),
                                              data: Unmanaged.passRetained(counter).toOpaque(), release: release)
            try element.set("silent", true)
            withExtendedLifetime(connection) {}
        }
        try element.set("silent", false)
        #expect(counter.fired.load(ordering: .relaxed) == 1)
    }

    private func push(_ pad: Pad) {
        gst_pad_push(pad.pointer, gst_buffer_new_allocate(nil, 4, nil))
    }
}

private final class Counter: Sendable {
    let fired = Atomic<Int>(0)
}
