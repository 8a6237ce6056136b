internal import CGStreamer

extension Element {
    /// Links every src pad this decodebin adds whose caps start with `media` (e.g. `audio/`) to
    /// `sink`, taking `sink` from the pad it had (`pad-added`, handled on the streaming thread
    /// that adds the pad, before data flows on it).
    ///
    /// gst-launch's `decodebin ! next` links only the first pad. A chained Ogg (two files
    /// concatenated, each a "link") makes decodebin drain the first link's pads, remove them and
    /// add new ones for the next: left unlinked, oggdemux stops with `not-linked` after the
    /// first link. The caps after `sink` (a converter and resampler) follow the new link's rate.
    public func followDecodedPads(_ media: String, into sink: Pad) -> SignalConnection {
        final class Target: @unchecked Sendable {
            // @unchecked: immutable after init; pad linking is thread-safe in GStreamer.
            let sink: Pad, media: String
            init(_ sink: Pad, _ media: String) { self.sink = sink; self.media = media }
        }
        typealias PadAdded = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GstPad>?, UnsafeMutableRawPointer?) -> Void
        let added: PadAdded = { _, pad, data in
            guard let pad, let data, gst_pad_get_direction(pad) == GST_PAD_SRC else { return }
            let target = Unmanaged<Target>.fromOpaque(data).takeUnretainedValue()
            guard let caps = gst_pad_query_caps(pad, nil) else { return }
            let text = takeGString(gst_caps_to_string(caps)) ?? ""
            gst_mini_object_unref(UnsafeMutableRawPointer(caps).assumingMemoryBound(to: GstMiniObject.self))
            guard text.hasPrefix(target.media) else { return }
            target.sink.unlink()
            _ = gst_pad_link(pad, target.sink.pointer)
        }
        let release: GClosureNotify = { data, _ in if let data { Unmanaged<Target>.fromOpaque(data).release() } }
        return SignalConnection(self, signal: "pad-added", handler: unsafeBitCast(added, to: GCallback.self),
                                data: Unmanaged.passRetained(Target(sink, media)).toOpaque(), release: release)
    }
}
