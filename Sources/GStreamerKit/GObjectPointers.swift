internal import CGStreamer

// GObject "casts" the C macros would do: all these types start with their parent struct.
extension UnsafeMutablePointer {
    @inline(__always) func gobject() -> UnsafeMutablePointer<GObject> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GObject.self) }
    @inline(__always) func gstObject() -> UnsafeMutablePointer<GstObject> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GstObject.self) }
    @inline(__always) func gstElement() -> UnsafeMutablePointer<GstElement> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GstElement.self) }
}

/// Takes a C string GLib allocated and frees it.
func takeGString(_ p: UnsafeMutablePointer<gchar>?) -> String? {
    guard let p else { return nil }
    defer { g_free(p) }
    return String(cString: p)
}

/// A GstObject's name, e.g. an element's `name=` from the pipeline description.
func objectName(_ object: UnsafeMutablePointer<GstObject>?) -> String {
    guard let object else { return "?" }
    return takeGString(gst_object_get_name(object)) ?? "?"
}
