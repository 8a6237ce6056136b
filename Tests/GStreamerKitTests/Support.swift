import CGStreamer
import CGStreamerShims
@testable import GStreamerKit

/// The object's reference count, read the way GStreamer's GST_OBJECT_REFCOUNT_VALUE does.
func refcount<T>(_ pointer: UnsafeMutablePointer<T>) -> UInt32 { sfb_object_refcount(pointer) }

func isFloating<T>(_ pointer: UnsafeMutablePointer<T>) -> Bool { g_object_is_floating(pointer) != 0 }

/// Posts an element message whose structure is called `name` (e.g. "seq-12"), from `source`,
/// as a streaming thread would (`gst_bus_post`).
func post(_ name: String, on bus: UnsafeMutablePointer<GstBus>, from source: UnsafeMutablePointer<GstObject>) {
    gst_bus_post(bus, gst_message_new_element(source, gst_structure_new_empty(name)))
}

extension BusMessage {
    /// The structure name of an element message, nil for any other kind.
    var elementName: String? {
        if case .element(_, let name) = self { name } else { nil }
    }
}

/// Reads `stream` until `done` says stop, the stream finishes, or `timeout` passes; returns
/// what arrived (a lost message shows as a short list rather than a hung test).
func collect(_ stream: AsyncStream<BusMessage>, timeout: Duration = .seconds(10),
             until done: @escaping @Sendable (BusMessage) -> Bool = { _ in false }) async -> [BusMessage] {
    await withTaskGroup(of: [BusMessage]?.self) { group in
        group.addTask {
            var got: [BusMessage] = []
            for await m in stream {
                got.append(m)
                if done(m) { break }
            }
            return got
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        var result: [BusMessage] = []
        while let next = await group.next() {
            if let got = next {
                result = got
                group.cancelAll()
            } else {
                group.cancelAll()  // timed out: the reader returns what it has
            }
        }
        return result
    }
}
