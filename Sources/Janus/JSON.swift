/// A JSON value: Janus bodies and plugin data are free-form, so they are carried as this.
public enum JSON: Sendable, Equatable, Codable, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral,
    ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral
{
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(Dictionary(elements, uniquingKeysWith: { $1 })) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }

    /// The deepest nesting decoded (keys and indexes from the top of the message). Janus's
    /// messages nest under ten levels; a failed `decode` costs more the deeper it is, so deep
    /// nesting is refused before it costs seconds (fuzzing found 1 s for a 1 KB message).
    public static let maxDepth = 32

    public init(from decoder: any Decoder) throws {
        guard decoder.codingPath.count <= Self.maxDepth else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "JSON nested deeper than \(Self.maxDepth) levels"))
        }
        let c = try decoder.singleValueContainer()
        // Arrays and objects first: trying the four scalar types on each level of a nested
        // value before its container made decoding cost grow with the cube of the depth.
        if c.decodeNil() { self = .null }
        else if let a = try? c.decode([JSON].self) { self = .array(a) }
        else if let o = try? c.decode([String: JSON].self) { self = .object(o) }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else { self = .string(try c.decode(String.self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    public subscript(key: String) -> JSON? {
        if case .object(let o) = self { o[key] } else { nil }
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var array: [JSON]? { if case .array(let a) = self { a } else { nil } }
    /// Integers, also when sent as a whole double or a numeric string (Janus ids can be either).
    public var int: Int64? {
        switch self {
        case .int(let i): i
        case .double(let d) where d.rounded() == d: Int64(exactly: d)
        case .string(let s): Int64(s)
        default: nil
        }
    }
}
