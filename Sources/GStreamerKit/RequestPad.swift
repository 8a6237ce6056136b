internal import CGStreamer
internal import CGStreamerShims

extension Element {
    /// Requests a pad of this element (`gst_element_request_pad_simple`), e.g. a `compositor`'s
    /// or an `audiomixer`'s `sink_%u` in the same pipeline as what will be linked to it. Give it
    /// back with `releaseRequestPad` once nothing is linked to it. Safe while playing for the
    /// aggregators; run it off Swift's pool all the same (it takes the element's locks).
    public func requestPad(_ template: String) throws(GStreamerError) -> Pad {
        guard let p = gst_element_request_pad_simple(pointer, template) else { throw .missingPad(element: name, pad: template) }
        return Pad(takingOwnership: p)
    }

    /// `gst_element_release_request_pad`: the pad leaves the element (an aggregator goes on with
    /// its other pads).
    public func releaseRequestPad(_ pad: Pad) {
        gst_element_release_request_pad(pointer, pad.pointer)
    }
}

extension Pad {
    /// Sets a pad property (a `compositor` pad's `xpos`, `alpha`, `sizing-policy`…) from its
    /// string form, parsed as the property's own type, as `Element.set` does.
    public func set(_ property: String, _ value: String) throws(GStreamerError) {
        switch sfb_object_set_property_from_string(pointer.gobject(), property, value) {
        case 0: return
        case 1: throw .missingProperty(element: name, property: property)
        default: throw .badPropertyValue(element: name, property: property, value: value)
        }
    }
}
