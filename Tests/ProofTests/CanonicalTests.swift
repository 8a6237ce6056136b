import Foundation
import Proof
import Testing

/// RFC 8785 (JCS) known answers: numbers as ECMAScript writes them, strings, member order.
@Suite struct CanonicalTests {
    @Test("numbers: ECMAScript Number.prototype.toString of the double (RFC 8785 §3.2.2.3 and Appendix B)",
          arguments: [
            (0.0, "0"), (-0.0, "0"), (1.0, "1"), (-1.5, "-1.5"), (4.5, "4.5"), (0.002, "0.002"), (1e-6, "0.000001"),
            (1e-7, "1e-7"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (123456789012345680000.0, "123456789012345680000"),
            (333333333.3333333, "333333333.3333333"), (Double.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
            (9007199254740992.0, "9007199254740992"), (2.5e-7, "2.5e-7"), (1.2345e25, "1.2345e+25"), (1774476923.512, "1774476923.512"),
          ])
    func numbers(_ value: Double, _ text: String) {
        #expect(Canonical.number(value) == text)
    }

    @Test("strings are escaped minimally and members sorted by UTF-16 code units (RFC 8785 §3.2.3 example)")
    func sortingAndStrings() throws {
        let input = #"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew","1":"One","\ud83d\ude00":"Emoji","\u0080":"Control","\u00f6":"o","a/b":"\u001f\"\\\n\t\u007f"}"#
        let out = String(decoding: Canonical.bytes(try JSONValue.parse(Data(input.utf8))), as: UTF8.self)
        #expect(out == "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"a/b\":\"\\u001f\\\"\\\\\\n\\t\u{7f}\",\"\u{80}\":\"Control\",\"ö\":\"o\",\"€\":\"Euro Sign\",\"😀\":\"Emoji\",\"\u{fb33}\":\"Hebrew\"}")
    }

    @Test("parsing refuses what JCS cannot sign the same way twice", arguments: [#"{"a":1,"a":2}"#, "[1,]", "01", #""\ud800""#, "1e999", "{} x"])
    func refused(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(text.utf8)) }
    }

    @Test("numbers keep their value through parse and canonical form (1.50e1 is 15, 1E2 is 100)")
    func numberForms() throws {
        let v = try JSONValue.parse(Data(#"[1.50e1, 1E2, -0.0, 0.1, 12345678901234567890]"#.utf8))
        #expect(String(decoding: Canonical.bytes(v), as: UTF8.self) == "[15,100,0,0.1,12345678901234567000]")
    }
}
