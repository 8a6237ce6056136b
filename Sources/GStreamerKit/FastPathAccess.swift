internal import CGStreamer

// The one door FastPath (Sources/FastPath) goes through to reach webrtcbin's internals: raw
// GStreamer pointers, as untyped addresses so that GStreamerKit's C imports stay internal.
// Package-level: nothing outside this package sees them, and nothing else in it should need them.

extension Element {
    /// This element's `GstElement *`, valid while this wrapper lives (it holds a reference).
    package var unsafeGstElement: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }
}

extension Pad {
    /// This pad's `GstPad *`, valid while this wrapper lives (it holds a reference).
    package var unsafeGstPad: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }

    /// Wraps a `GstPad *` whose reference the caller hands over.
    package static func takingOwnership(ofGstPad raw: UnsafeMutableRawPointer) -> Pad {
        Pad(takingOwnership: raw.assumingMemoryBound(to: GstPad.self))
    }
}

extension PadProbe {
    /// Owns a probe FastPath's C added on `pad` (`gst_pad_add_probe`'s id): removed with it.
    package convenience init(pad: Pad, probeID: UInt) { self.init(pad: pad, id: gulong(probeID)) }
}
