internal import CGStreamer

extension Bin {
    /// Requests a pad from the element named `element` inside this bin (e.g. a `tee`'s `src_%u`,
    /// an `audiomixer`'s `sink_%u`) and exposes it on the bin as a ghost pad, which is returned.
    /// Give it back with `releaseExposedPad`.
    public func exposeRequestPad(of element: String, template: String) throws(GStreamerError) -> Pad {
        let inner = try self.element(named: element)
        guard let target = gst_element_request_pad_simple(inner.pointer, template) else {
            throw .missingPad(element: element, pad: template)
        }
        defer { gst_object_unref(UnsafeMutableRawPointer(target)) }
        guard let ghost = gst_ghost_pad_new(nil, target) else { throw .linkFailed("cannot expose \(element).\(template) on \(name)") }
        // The wrapper sinks the new pad's floating reference; the bin takes one of its own, so
        // a pad the bin refuses is freed with the wrapper instead of leaking.
        let pad = Pad(takingOwnership: ghost)
        // A running bin does not activate pads added to it.
        _ = gst_pad_set_active(ghost, 1)
        guard gst_element_add_pad(pointer, ghost) != 0 else { throw .linkFailed("cannot expose \(element).\(template) on \(name)") }
        return pad
    }

    /// The request pad behind a ghost pad made by `exposeRequestPad` (an aggregator's sink pad,
    /// whose properties are its own).
    public func exposedTarget(_ ghost: Pad) -> Pad? {
        gst_ghost_pad_get_target(UnsafeMutableRawPointer(ghost.pointer).assumingMemoryBound(to: GstGhostPad.self)).map { Pad(takingOwnership: $0) }
    }

    /// Removes a ghost pad made by `exposeRequestPad` and releases the request pad behind it.
    public func releaseExposedPad(_ ghost: Pad) {
        let ghostPointer = UnsafeMutableRawPointer(ghost.pointer).assumingMemoryBound(to: GstGhostPad.self)
        let target = gst_ghost_pad_get_target(ghostPointer)
        _ = gst_ghost_pad_set_target(ghostPointer, nil)
        _ = gst_element_remove_pad(pointer, ghost.pointer)
        guard let target else { return }
        if let owner = gst_pad_get_parent_element(target) {
            gst_element_release_request_pad(owner, target)
            gst_object_unref(UnsafeMutableRawPointer(owner))
        }
        gst_object_unref(UnsafeMutableRawPointer(target))
    }

    /// Whether the aggregator pad behind `ghost` (from `exposeRequestPad`) has taken in its
    /// end-of-stream, so everything before it was aggregated. False if it is not an aggregator's.
    public func exposedPadTookEndOfStream(_ ghost: Pad) -> Bool {
        let ghostPointer = UnsafeMutableRawPointer(ghost.pointer).assumingMemoryBound(to: GstGhostPad.self)
        guard let target = gst_ghost_pad_get_target(ghostPointer) else { return false }
        defer { gst_object_unref(UnsafeMutableRawPointer(target)) }
        guard g_type_check_instance_is_a(UnsafeMutableRawPointer(target).assumingMemoryBound(to: GTypeInstance.self), gst_aggregator_pad_get_type()) != 0 else { return false }
        return gst_aggregator_pad_is_eos(UnsafeMutableRawPointer(target).assumingMemoryBound(to: GstAggregatorPad.self)) != 0
    }
}
