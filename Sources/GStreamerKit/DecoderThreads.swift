internal import CGStreamer
internal import CGStreamerShims

extension Element {
    /// Gives every decoder this bin (a decodebin) adds, at any depth, at most `threads`
    /// decoding threads (`max-threads` of the libav decoders, `threads` of libvpx's), set as it is
    /// added, before it opens. A frame-threaded decoder holds a picture per thread on top of its
    /// reference pictures: for a 4096x2160 4:4:4 source (26.5 MB a picture) that is what made
    /// the player's memory grow with the machine's cores (measured 356 MB with 2 threads, 186 MB
    /// with 1, for the decode chain alone).
    public func limitDecoderThreads(to threads: Int) -> SignalConnection {
        final class Limit: Sendable {
            let value: String
            init(_ value: Int) { self.value = String(value) }
        }
        typealias Added = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<GstElement>?, UnsafeMutableRawPointer?) -> Void
        let added: Added = { _, _, element, data in
            guard let element, let data else { return }
            let limit = Unmanaged<Limit>.fromOpaque(data).takeUnretainedValue()
            let object = element.gobject()
            guard let klass = object.pointee.g_type_instance.g_class else { return }
            let objectClass = UnsafeMutableRawPointer(klass).assumingMemoryBound(to: GObjectClass.self)
            for name in ["max-threads", "threads"] where g_object_class_find_property(objectClass, name) != nil {
                // Only decoders: an encoder's or a converter's threads are not ours to change.
                guard let factory = gst_element_get_factory(element),
                      let klassName = gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_KLASS),
                      String(cString: klassName).contains("Decoder") else { return }
                _ = sfb_object_set_property_from_string(object, name, limit.value)
                return
            }
        }
        let release: GClosureNotify = { data, _ in if let data { Unmanaged<Limit>.fromOpaque(data).release() } }
        return SignalConnection(self, signal: "deep-element-added", handler: unsafeBitCast(added, to: GCallback.self),
                                data: Unmanaged.passRetained(Limit(threads)).toOpaque(), release: release)
    }
}
