/// Rewrites encoded frames on a pad: the E2EE seal between encoder and payloader, the
/// open between depayloader and muxer. Called on GStreamer streaming threads, once per frame.
public protocol FrameTransform: Sendable {
    /// The most bytes `transform` may write for `input` (0 when it will be dropped anyway).
    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int
    /// Writes the new frame into `output` and returns its length, or nil to drop the frame.
    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int?
}

/// What a `HoldingFrameTransform` made of one arriving frame.
public enum FrameOutcome: Sendable, Equatable {
    /// The new frame, this many bytes of the output. The frames held are settled first.
    case output(Int)
    /// Dropped. The frames held are settled first.
    case drop
    /// Kept as it came, behind the frames held, until a later frame that is not held (or the
    /// end of the stream) settles them: tried again with `retry` and handed on, in order,
    /// before that frame.
    case hold
}

/// A frame transform that may keep a frame it cannot transform yet and try it again later
/// (an opener whose key is on its way). Called on one streaming thread at a time.
public protocol HoldingFrameTransform: Sendable {
    /// The most bytes `transform` or `retry` may write for `input`.
    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int
    /// One frame as it arrives.
    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> FrameOutcome
    /// A held frame tried once more as the hold is settled: its length, or nil to drop it.
    func retry(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int?
    /// The hold was settled: every held frame went through `retry`, except `abandoned` ones
    /// given up untried (a flush, or the probe removed with frames still held).
    func settled(abandoned: Int)
}
