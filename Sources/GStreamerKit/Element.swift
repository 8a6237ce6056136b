internal import CGStreamer
internal import CGStreamerShims

/// Owns exactly one reference to a GstElement, dropped in deinit.
public class Element: @unchecked Sendable {
    // @unchecked: GstObject reference counting and property access are thread-safe in GStreamer.
    let pointer: UnsafeMutablePointer<GstElement>

    /// Takes over a reference the caller hands over: a full one (`gst_bin_get_by_name`), or a
    /// floating one (`gst_element_factory_make`), which is sunk so the wrapper holds a full one.
    init(takingOwnership pointer: UnsafeMutablePointer<GstElement>) {
        if g_object_is_floating(UnsafeMutableRawPointer(pointer)) != 0 {
            gst_object_ref_sink(UnsafeMutableRawPointer(pointer))
        }
        self.pointer = pointer
    }

    /// Takes a reference of its own to an element it was only lent (a signal argument, a
    /// pointer someone else owns). `gst_object_ref`, never `ref_sink`: a floating reference
    /// stays the caller's, to hand to a bin.
    init(retaining pointer: UnsafeMutablePointer<GstElement>) {
        gst_object_ref(UnsafeMutableRawPointer(pointer))
        self.pointer = pointer
    }

    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    /// Makes an element from a factory (`gst_element_factory_make`).
    public convenience init(factory: String, name: String? = nil) throws(GStreamerError) {
        GStreamer.initialize()
        guard let e = gst_element_factory_make(factory, name) else {
            throw .parse("no element factory '\(factory)' is installed")
        }
        self.init(takingOwnership: e)
    }

    public var name: String { objectName(pointer.gstObject()) }

    /// Sets a property from its string form, parsed as the property's own type.
    public func set(_ property: String, _ value: String) throws(GStreamerError) {
        switch sfb_object_set_property_from_string(pointer.gobject(), property, value) {
        case 0: return
        case 1: throw .missingProperty(element: name, property: property)
        default: throw .badPropertyValue(element: name, property: property, value: value)
        }
    }

    public func set(_ property: String, _ value: Bool) throws(GStreamerError) { try set(property, value ? "true" : "false") }
    public func set(_ property: String, _ value: Int) throws(GStreamerError) { try set(property, String(value)) }

    /// A property's value in its serialized form.
    public func get(_ property: String) throws(GStreamerError) -> String {
        guard sfb_object_has_property(pointer.gobject(), property) != 0 else {
            throw .missingProperty(element: name, property: property)
        }
        return takeGString(sfb_object_get_property_string(pointer.gobject(), property)) ?? ""
    }

    /// `gst_element_get_static_pad`.
    public func staticPad(_ name: String) throws(GStreamerError) -> Pad {
        guard let p = gst_element_get_static_pad(pointer, name) else { throw .missingPad(element: self.name, pad: name) }
        return Pad(takingOwnership: p)
    }

    /// Sends end-of-stream into this element (`gst_element_send_event`).
    @discardableResult
    public func sendEndOfStream() -> Bool { gst_element_send_event(pointer, gst_event_new_eos()) != 0 }

    /// Moves the element to its parent's state (`gst_element_sync_state_with_parent`).
    @discardableResult
    public func syncStateWithParent() -> Bool { gst_element_sync_state_with_parent(pointer) != 0 }

    /// `gst_element_link`.
    public func link(to other: Element) throws(GStreamerError) {
        guard gst_element_link(pointer, other.pointer) != 0 else { throw .linkFailed("\(name) → \(other.name)") }
    }
}
