/// Polls `condition` every 50 ms until it holds or `seconds` pass; returns whether it held.
/// For waits on a state, in place of a sleep sized for a quiet machine.
public func eventually(within seconds: Double, _ condition: () async -> Bool) async -> Bool {
    let end = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return await condition()
}
