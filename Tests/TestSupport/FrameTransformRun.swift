public import GStreamerKit

extension FrameTransform {
    /// Runs this transform the way its pad probe does: an output buffer of the capacity it asks
    /// for, cut to what it wrote; nil if it dropped the frame.
    public func run(_ input: [UInt8]) -> [UInt8]? {
        input.withUnsafeBytes { inBytes in
            var out = [UInt8](repeating: 0, count: outputCapacity(for: inBytes))
            let n = out.withUnsafeMutableBytes { transform(inBytes, into: $0) }
            return n.map { Array(out.prefix($0)) }
        }
    }
}
