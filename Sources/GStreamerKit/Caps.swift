import Foundation

/// Reads an integer field from a caps string, e.g. `width` from `video/x-raw, width=(int)640, ...`.
public func capsInt(_ field: String, in caps: String) -> Int? {
    guard let r = caps.range(of: "\(field)=(int)") else { return nil }
    return Int(caps[r.upperBound...].prefix { $0.isNumber })
}
