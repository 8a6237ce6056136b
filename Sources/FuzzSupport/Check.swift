/// Stops a fuzz target when a property of the code under test fails. Unlike `precondition`,
/// whose message an optimized build drops, it prints what broke above libFuzzer's report.
public func check(_ condition: Bool, _ message: @autoclosure () -> String = "", file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fatalError(message(), file: file, line: line) }
}
