/// The options send-limit and receive-limit share: how much traffic, and how fast.
struct LimitOptions {
    struct Invalid: Error { let why: String }

    var publishers: Int
    var seconds = 10.0
    var packets: Int?
    var speed = 1.0

    /// Takes `flag value` if it is one of these (true), leaves it to the caller if not (false).
    mutating func take(_ flag: String, _ value: String) throws(Invalid) -> Bool {
        switch flag {
        case "--publishers": guard let v = Int(value), v > 0 else { throw Invalid(why: "--publishers: a count") }; publishers = v
        case "--seconds": guard let v = Double(value), v > 0 else { throw Invalid(why: "--seconds: a duration") }; seconds = v
        case "--packets": guard let v = Int(value), v > 0 else { throw Invalid(why: "--packets: a count") }; packets = v
        case "--speed": guard let v = Double(value), v > 0 else { throw Invalid(why: "--speed: a factor") }; speed = v
        default: return false
        }
        return true
    }
}
