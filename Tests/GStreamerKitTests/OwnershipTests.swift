import CGStreamer
@testable import GStreamerKit
import Testing

/// Each wrapper owns exactly one reference: wrapping adds one (or takes over the caller's),
/// deinit drops it, and a floating reference the wrapper was only lent stays floating.
@Suite struct OwnershipTests {
    init() { GStreamer.initialize() }

    @Test func factoryElementOwnsItsOnlyReference() throws {
        let raw: UnsafeMutablePointer<GstElement>
        do {
            let element = try Element(factory: "identity")
            raw = element.pointer
            #expect(refcount(raw) == 1)
            #expect(!isFloating(raw))
            gst_object_ref(raw)  // keep the object readable after the wrapper is gone
            #expect(refcount(raw) == 2)
        }
        #expect(refcount(raw) == 1)
        gst_object_unref(raw)
    }

    @Test func retainingALentFloatingElementLeavesItFloating() throws {
        // The caller made it and will hand its floating reference to a bin.
        let raw = try #require(gst_element_factory_make("identity", nil))
        #expect(isFloating(raw))
        let bin = try #require(gst_bin_new(nil))
        gst_object_ref_sink(bin)
        do {
            let element = Element(retaining: raw)
            #expect(refcount(element.pointer) == 2)
            #expect(isFloating(raw))  // not stolen from the caller
            gst_bin_add(UnsafeMutableRawPointer(bin).assumingMemoryBound(to: GstBin.self), raw)  // takes the floating one
            #expect(!isFloating(raw))
            #expect(refcount(raw) == 2)
        }
        #expect(refcount(raw) == 1)  // the bin's
        gst_object_unref(bin)
    }

    @Test func retainingAnOwnedElementAddsOneReference() throws {
        let raw = try #require(gst_element_factory_make("identity", nil))
        gst_object_ref_sink(raw)
        do {
            let element = Element(retaining: raw)
            #expect(refcount(element.pointer) == 2)
        }
        #expect(refcount(raw) == 1)
        gst_object_unref(raw)
    }

    @Test func elementFoundInABinAddsOneReference() throws {
        let pipeline = try Pipeline(description: "identity name=a ! fakesink")
        let raw: UnsafeMutablePointer<GstElement>
        do {
            let a = try pipeline.element(named: "a")
            raw = a.pointer
            #expect(refcount(raw) == 2)  // the pipeline's and the wrapper's
        }
        #expect(refcount(raw) == 1)
    }

    @Test func padsOwnOneReference() throws {
        let element = try Element(factory: "identity")
        let raw: UnsafeMutablePointer<GstPad>
        do {
            let pad = try element.staticPad("sink")
            raw = pad.pointer
            #expect(refcount(raw) == 2)  // the element's and the wrapper's
            let again = Pad(retaining: raw)
            #expect(refcount(again.pointer) == 3)
        }
        #expect(refcount(raw) == 1)

        // A new pad's floating reference is taken over: one owner, not floating.
        let fresh = try #require(gst_pad_new("p", GST_PAD_SRC))
        let pad = Pad(takingOwnership: fresh)
        #expect(refcount(pad.pointer) == 1)
        #expect(!isFloating(fresh))
    }

    @Test func exposedPadIsOwnedByTheBinAndTheWrapper() throws {
        let pipeline = try Pipeline(description: "tee name=t")
        let raw: UnsafeMutablePointer<GstPad>
        do {
            let ghost = try pipeline.exposeRequestPad(of: "t", template: "src_%u")
            raw = ghost.pointer
            #expect(refcount(raw) == 2)
            #expect(!isFloating(raw))
            gst_object_ref(raw)
            pipeline.releaseExposedPad(ghost)
            #expect(refcount(raw) == 2)  // the wrapper's and ours
        }
        #expect(refcount(raw) == 1)
        gst_object_unref(raw)
    }
}
