import Foundation

/// Reads an integer field from a caps string, e.g. `width` from `video/x-raw, width=(int)640, ...`.
public func capsInt(_ field: String, in caps: String) -> Int? {
    capsField(field, type: "int", in: caps).flatMap { Int($0.prefix { $0.isNumber }) }
}

/// Reads a string field from a caps string, e.g. `profile` from `video/x-h264, profile=(string)high, ...`.
public func capsString(_ field: String, in caps: String) -> String? {
    guard let rest = capsField(field, type: "string", in: caps) else { return nil }
    if rest.first == "\"" { return String(rest.dropFirst().prefix { $0 != "\"" }) }
    return String(rest.prefix { $0 != "," && $0 != ";" })
}

/// What follows `, field=(type)` (a whole field name: `profile` does not match `base-profile`).
private func capsField(_ field: String, type: String, in caps: String) -> Substring? {
    guard let r = caps.range(of: ", \(field)=(\(type))") else { return nil }
    return caps[r.upperBound...]
}
