internal import CGStreamer
internal import CGStreamerShims
import Locking

/// A GstBin: an element holding others, found by name.
public class Bin: Element, @unchecked Sendable {
    /// The element named `name` inside this bin, at any depth (`gst_bin_get_by_name`).
    public func element(named name: String) throws(GStreamerError) -> Element {
        guard let e = gst_bin_get_by_name(binPointer, name) else { throw .missingElement(name) }
        return Element(takingOwnership: e)
    }

    var binPointer: UnsafeMutablePointer<GstBin> { UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GstBin.self) }
}

/// A top-level pipeline built from a gst-launch description (`gst_parse_launch`).
public final class Pipeline: Bin, @unchecked Sendable {
    /// Every bus message from creation on (see `BusDispatch`).
    private let busDispatch = BusDispatch()

    public enum State: Sendable {
        case null, ready, paused, playing
        var gst: GstState {
            switch self {
            case .null: GST_STATE_NULL
            case .ready: GST_STATE_READY
            case .paused: GST_STATE_PAUSED
            case .playing: GST_STATE_PLAYING
            }
        }
    }

    /// Parses a description such as the files in `pipelines/`.
    public init(description: String) throws(GStreamerError) {
        GStreamer.initialize()
        var e = try Self.parseLaunch(description)
        // A description of one element parses to that element: put it in a pipeline.
        if sfb_is_pipeline(e) == 0 {
            let p = gst_pipeline_new(nil)!
            gst_bin_add(UnsafeMutableRawPointer(p).assumingMemoryBound(to: GstBin.self), e)  // sinks e's floating ref
            e = p
        }
        super.init(takingOwnership: e)
        // Before anything can run: no streaming thread exists until the first state change.
        let bus = gst_element_get_bus(pointer)!
        busDispatch.install(on: bus)
        gst_object_unref(UnsafeMutableRawPointer(bus))
    }

    /// Parses `description` as a bin whose unlinked pads become ghost pads, adds it to the
    /// pipeline and returns it (not yet started: call `syncStateWithParent`).
    public func addBin(description: String, name: String) throws(GStreamerError) -> Bin {
        var error: UnsafeMutablePointer<GError>?
        let b = gst_parse_bin_from_description(description, 1, &error)
        if let error {
            let message = String(cString: error.pointee.message)
            g_error_free(error)
            if let b { gst_object_unref(UnsafeMutableRawPointer(b)) }
            throw .parse(message)
        }
        guard let b else { throw .parse("empty bin") }
        let bin = Bin(takingOwnership: b.gstElement())
        _ = gst_object_set_name(bin.pointer.gstObject(), name)
        guard gst_bin_add(binPointer, bin.pointer) != 0 else { throw .linkFailed("cannot add bin \(name)") }
        return bin
    }

    /// `gst_parse_launch`: the new (floating) element, or the parser's error.
    private static func parseLaunch(_ description: String) throws(GStreamerError) -> UnsafeMutablePointer<GstElement> {
        var error: UnsafeMutablePointer<GError>?
        let e = gst_parse_launch(description, &error)
        if let error {
            let message = String(cString: error.pointee.message)
            g_error_free(error)
            if let e { gst_object_unref(UnsafeMutableRawPointer(e)) }
            throw .parse(message)
        }
        guard let e else { throw .parse("empty description") }
        return e
    }

    /// Parses a description of ONE element (e.g. `webrtcbin bundle-policy=max-bundle`), names it
    /// and adds it to the pipeline (not yet started: call `syncStateWithParent`). Unlike a bin,
    /// the element's own pads (request and sometimes pads included) are linkable from outside.
    public func addElement(description: String, name: String) throws(GStreamerError) -> Element {
        let e = try Self.parseLaunch(description)
        let element = Element(takingOwnership: e)  // sinks the floating reference
        guard sfb_is_pipeline(e) == 0 else {
            throw .parse("'\(description)' is more than one element")
        }
        _ = gst_object_set_name(element.pointer.gstObject(), name)
        guard gst_bin_add(binPointer, element.pointer) != 0 else { throw .linkFailed("cannot add \(name)") }
        return element
    }

    /// Removes a child (after setting it to NULL), e.g. a finished receive branch.
    public func remove(_ child: Element) {
        gst_element_set_state(child.pointer, GST_STATE_NULL)
        gst_bin_remove(binPointer, child.pointer)
    }

    /// Changes state without throwing: for the way out, where a failure changes nothing.
    public func setStateQuietly(_ state: State) { try? setState(state) }

    /// Changes state (`gst_element_set_state`); if GStreamer reports the change failed (e.g. a
    /// file that cannot be opened), throws with the failing element and its bus error.
    public func setState(_ state: State) throws(GStreamerError) {
        let mark = busDispatch.errorMark
        guard gst_element_set_state(pointer, state.gst) == GST_STATE_CHANGE_FAILURE else { return }
        // An element that refuses posts its error before the call returns, on this thread.
        let failure = busDispatch.firstError(after: mark)
        throw .stateChangeFailed(pipeline: name, state: "\(state)", element: failure?.source,
                                 message: failure?.message, debug: failure?.debug)
    }

    /// The pipeline's bus.
    public var bus: Bus { Bus(takingOwnership: gst_element_get_bus(pointer)!, dispatch: busDispatch) }

    /// Plays a finite pipeline (files in, files out) to its end; throws the first error, or
    /// `.interrupted` if the task was cancelled first (the output is then incomplete: a caller
    /// finishing files must run this where nothing cancels it). State changes run off the pool.
    public func runToEnd() async throws(GStreamerError) {
        let messages = bus.messages()
        try await OffPool.run { () throws(GStreamerError) in try self.setState(.playing) }
        for await m in messages {
            switch m {
            case .endOfStream:
                await OffPool.run { self.setStateQuietly(.null) }
                return
            case .error(let source, let text, _):
                await OffPool.run { self.setStateQuietly(.null) }
                throw .stateChange("\(source): \(text)")
            default: continue
            }
        }
        await OffPool.run { self.setStateQuietly(.null) }
        throw .interrupted("stopped before the end of the stream")
    }

    /// The pipeline's current running time in nanoseconds (`gst_element_get_current_running_time`).
    /// Runs on `other`'s clock and base time, so running times (hence RTP timestamps and
    /// sender reports) agree with buffers `other` produces. Call before going to PLAYING;
    /// `other` must be playing.
    public func shareClock(with other: Pipeline) {
        guard let clock = gst_element_get_clock(other.pointer) else { return }
        let me = UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GstPipeline.self)
        gst_pipeline_use_clock(me, clock)
        gst_object_unref(UnsafeMutableRawPointer(clock))
        gst_element_set_start_time(pointer, UInt.max)  // GST_CLOCK_TIME_NONE: keep the base time
        gst_element_set_base_time(pointer, gst_element_get_base_time(other.pointer))
    }

    /// The clock time at which the pipeline's running time is 0 (ns): a running time plus it is a
    /// time on the clock, comparable with another pipeline's on the same (system) clock.
    public var baseTime: UInt64 { UInt64(gst_element_get_base_time(pointer)) }

    public var runningTime: UInt64? {
        let t = gst_element_get_current_running_time(pointer)
        return t == UInt.max ? nil : UInt64(t)
    }

    /// Running time of the pipeline clock in seconds, or nil before it plays.
    public var position: Double? {
        var pos: gint64 = 0
        guard gst_element_query_position(pointer, GST_FORMAT_TIME, &pos) != 0, pos >= 0 else { return nil }
        return Double(pos) / 1e9
    }

    /// Stops the pipeline (NULL) off the cooperative pool: a teardown joins streaming threads.
    public func stop() async {
        await OffPool.run { self.setStateQuietly(.null) }
    }

    /// The last reference may drop on any thread, a cooperative one included: the state change
    /// (which joins every streaming thread) and the final unref go to a thread of their own.
    deinit {
        let p = UnsafeMutableRawPointer(pointer)
        gst_object_ref(p)
        OffPool.later { [p = UInt(bitPattern: p)] in
            let element = UnsafeMutableRawPointer(bitPattern: p)!.assumingMemoryBound(to: GstElement.self)
            gst_element_set_state(element, GST_STATE_NULL)
            gst_object_unref(UnsafeMutableRawPointer(element))
        }
    }
}
