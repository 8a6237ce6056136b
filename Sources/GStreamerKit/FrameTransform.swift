/// Rewrites encoded frames on a pad: the E2EE seal between encoder and payloader, the
/// open between depayloader and muxer. Called on GStreamer streaming threads, once per frame.
public protocol FrameTransform: Sendable {
    /// The most bytes `transform` may write for `input` (0 when it will be dropped anyway).
    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int
    /// Writes the new frame into `output` and returns its length, or nil to drop the frame.
    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int?
}
