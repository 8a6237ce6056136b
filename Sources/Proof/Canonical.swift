public import Foundation

/// RFC 8785 JSON Canonicalization Scheme (JCS): the bytes that are signed. docs/proof.md
/// spells out every rule so that another implementation reproduces them.
///
/// - no whitespace; object members sorted by their names' UTF-16 code units;
/// - strings: UTF-8, with only `"` `\` and U+0000–U+001F escaped (`\b \t \n \f \r`, others
///   `\u00xx` in lower-case hex); `/` and every other character as is;
/// - numbers as ECMAScript's `Number.prototype.toString` writes the double (shortest digits
///   that round-trip; no exponent from 1e-6 up to 1e21; `-0` is `0`).
public enum Canonical {
    public static func bytes(_ value: JSONValue) -> Data {
        var out = ""
        write(value, into: &out)
        return Data(out.utf8)
    }

    static func write(_ value: JSONValue, into out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let d): out += number(d)
        case .string(let s): string(s, into: &out)
        case .array(let items):
            out += "["
            for (n, item) in items.enumerated() {
                if n > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            let names = members.keys.sorted { Array($0.utf16).lexicographicallyPrecedes(Array($1.utf16)) }
            for (n, name) in names.enumerated() {
                if n > 0 { out += "," }
                string(name, into: &out)
                out += ":"
                write(members[name]!, into: &out)
            }
            out += "}"
        }
    }

    static func string(_ s: String, into out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{08}": out += "\\b"
            case "\u{09}": out += "\\t"
            case "\u{0A}": out += "\\n"
            case "\u{0C}": out += "\\f"
            case "\u{0D}": out += "\\r"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }

    /// ECMAScript Number::toString(x) (ECMA-262 §6.1.6.1.20) from Swift's shortest round-trip
    /// digits (`description`). Non-finite numbers do not occur (the parser refuses them).
    public static func number(_ x: Double) -> String {
        if x == 0 { return "0" }
        if x < 0 { return "-" + number(-x) }
        let text = "\(x)"
        let parts = text.split(separator: "e", maxSplits: 1)
        let exp = parts.count == 2 ? Int(parts[1])! : 0
        let mantissa = parts[0].split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let intPart = String(mantissa[0]), fracPart = mantissa.count == 2 ? String(mantissa[1]) : ""
        var digits = Array(intPart + fracPart)
        var n = intPart.count + exp
        while digits.first == "0" { digits.removeFirst(); n -= 1 }
        while digits.last == "0" { digits.removeLast() }
        let k = digits.count
        let s = String(digits)
        if k <= n, n <= 21 { return s + String(repeating: "0", count: n - k) }
        if 0 < n, n <= 21 { return String(digits[0..<n]) + "." + String(digits[n...]) }
        if -6 < n, n <= 0 { return "0." + String(repeating: "0", count: -n) + s }
        let e = n - 1
        let sign = e < 0 ? "-" : "+"
        let head = k == 1 ? s : String(digits[0]) + "." + String(digits[1...])
        return head + "e" + sign + String(abs(e))
    }
}
