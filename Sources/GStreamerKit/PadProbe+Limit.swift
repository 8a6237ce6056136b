internal import CGStreamer
import Synchronization

private final class LimitBox: Sendable {
    let limit: Int
    let passed = Atomic<Int>(0)
    init(_ limit: Int) { self.limit = limit }
}

extension Pad {
    /// Lets the first `limit` buffers through and drops the rest (upstream sees success), e.g. to
    /// decode the start of a long file as proof that it decodes, at a cost that does not grow
    /// with the file.
    public func addPassLimit(_ limit: Int) -> PadProbe {
        let box = Unmanaged.passRetained(LimitBox(limit)).toOpaque()
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { _, _, data in
            guard let data else { return GST_PAD_PROBE_OK }
            let box = Unmanaged<LimitBox>.fromOpaque(data).takeUnretainedValue()
            return box.passed.add(1, ordering: .relaxed).newValue <= box.limit ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP
        }, box, { data in
            if let data { Unmanaged<LimitBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }
}
