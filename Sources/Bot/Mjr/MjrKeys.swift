public import FrameCrypto
public import Foundation

/// Which keys may open a recorded frame. A `.mjr` file spans the whole call, and a call's key
/// rotates (every 300 s in ECall), so the choice is per frame: by the publisher that sent it
/// and when. `--key-hex`/`--key-file` give one key for everything (`MjrFixedKey`); a key log
/// or key map can answer per sender and time by conforming to this protocol.
public protocol MjrKeySource: Sendable {
    /// Keys to try for a frame that `sender` (the Janus user id from the file name, nil if the
    /// name does not say) sent at `time` (wall clock, from the file's first-packet time and
    /// the frame's RTP timestamp).
    func candidates(sender: String?, at time: Date) -> KeyRing.Candidates
}

/// One key for every frame.
public struct MjrFixedKey: MjrKeySource {
    private let keys: KeyRing.Candidates
    public init(_ key: CallKey) { keys = KeyRing(current: key).candidates }
    public init(ring: KeyRing) { keys = ring.candidates }
    public func candidates(sender: String?, at time: Date) -> KeyRing.Candidates { keys }
}
