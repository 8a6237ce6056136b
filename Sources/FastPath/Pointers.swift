internal import CGStreamer
import GStreamerKit

// GStreamerKit's wrappers as the C types CDirectRTP takes (GStreamerKit's FastPathAccess.swift).
extension Element {
    var gstElement: UnsafeMutablePointer<GstElement> { unsafeGstElement.assumingMemoryBound(to: GstElement.self) }
}

extension Pad {
    var gstPad: UnsafeMutablePointer<GstPad> { unsafeGstPad.assumingMemoryBound(to: GstPad.self) }
}
