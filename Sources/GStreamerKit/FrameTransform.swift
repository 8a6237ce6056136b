/// Rewrites encoded frames on a pad: the E2EE seal between encoder and payloader, the
/// open between depayloader and muxer. Called on GStreamer streaming threads, once per frame.
public protocol FrameTransform: Sendable {
    /// The most bytes `transform` may write for an input of `count` bytes.
    func outputCapacity(forInput count: Int) -> Int
    /// Writes the new frame into `output` and returns its length, or nil to drop the frame.
    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int?
}
