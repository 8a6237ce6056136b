import Synchronization
import Locking

/// One participant's FrameCryptor key at one key index: its material, the AES-128-GCM key
/// derived from it (PBKDF2-HMAC-SHA256, the call's salt, 100 000 iterations, 16 bytes), and,
/// derived lazily and kept, the next `ratchetWindow` ratchet steps
/// (material' = PBKDF2(material, salt, 100 000, 32 bytes)).
///
/// PBKDF2 costs tens of milliseconds, so nothing here runs it per frame: the initial key is
/// derived in `init`, and each ratchet step once, the first time a frame fails to open with
/// the steps before it. A stream sealed with a key no ratchet reaches then costs only
/// AES-GCM attempts. A frame that opens with step k makes step k this key's material, as
/// libwebrtc's receiver does (`SetKeyFromMaterial`); a frame no step opens changes nothing.
public final class FrameCryptorKey: Sendable {
    struct Step: Sendable {
        let material: [UInt8]
        let pool: AEADPool
    }

    private struct State: Sendable {
        var current: Step
        /// Steps 1, 2, … past `current`, as far as derived so far.
        var ahead: [Step] = []
        /// Bumped whenever `current` changes, so a step derived meanwhile is not kept.
        var generation = 0
    }

    public let options: FrameCryptorOptions
    private let state: Locked<State>
    /// Ratchet steps derived so far (two PBKDF2 each): lets tests show nothing is re-derived.
    let derivedSteps = Atomic<Int>(0)

    /// Derives the AES key from `material`: one PBKDF2, tens of milliseconds, so not on Swift's
    /// cooperative pool nor a media thread.
    public init(material: KeyMaterial, options: FrameCryptorOptions) {
        self.options = options
        state = Locked(State(current: Self.step(material.bytes, salt: options.ratchetSalt)))
    }

    /// The current material (after any ratchet adopted or applied).
    public var material: KeyMaterial {
        // Material is the caller's (1...512 bytes, checked) or a 32-byte PBKDF2 output.
        try! KeyMaterial(state.withLock { $0.current.material })
    }

    /// The AES-GCM key of the current material.
    public static func deriveAESKey(material: [UInt8], salt: [UInt8]) -> [UInt8] {
        AEADCipher.pbkdf2SHA256(material, salt: salt, count: 16)
    }

    /// One ratchet step of `material` (32 bytes), as libwebrtc's `RatchetKeyMaterial`.
    public static func ratchetMaterial(_ material: [UInt8], salt: [UInt8]) -> [UInt8] {
        AEADCipher.pbkdf2SHA256(material, salt: salt, count: 32)
    }

    /// Sender or host side: advances this key one ratchet step (libwebrtc's `RatchetKey`).
    public func ratchet() {
        while true {
            let (material, next, generation) = state.withLock { s in (s.current.material, s.ahead.first, s.generation) }
            // Derived outside the lock: a PBKDF2 must not hold up frames opening meanwhile.
            let step = next ?? derive(from: material)
            let done = state.withLock { s in
                guard s.generation == generation else { return false }  // changed meanwhile: again
                if !s.ahead.isEmpty { s.ahead.removeFirst() }
                s.current = step
                s.generation += 1
                return true
            }
            if done { return }
        }
    }

    /// Derives and keeps the ratchet window now (2 PBKDF2 per step, ~0.5 s for 8), so that the
    /// first frame a ratcheted sender sends does not pay it on the thread that opens it. Call
    /// off the cooperative pool, e.g. right after a key is handed in.
    public func deriveRatchetWindow() {
        let (material, have, generation) = state.withLock { s in (s.ahead.last?.material ?? s.current.material, s.ahead.count, s.generation) }
        var previous = material
        for _ in stride(from: have, to: options.ratchetWindow, by: 1) {
            let step = derive(from: previous)
            let kept = state.withLock { s in
                guard s.generation == generation else { return false }
                s.ahead.append(step)
                return true
            }
            guard kept else { return }  // the key moved meanwhile: the opener derives what it needs
            previous = step.material
        }
    }

    /// The cipher pool of the current material, for sealing.
    var sealPool: AEADPool { state.withLock { $0.current.pool } }

    /// Runs `attempt` with the current key, then with ratchet steps 1...window until one
    /// returns true; adopts that step. Returns the step that opened (0: current), nil if none.
    func open(_ attempt: (AEADPool) -> Bool) -> Int? {
        let (current, generation) = state.withLock { s in (s.current, s.generation) }
        if attempt(current.pool) { return 0 }
        var previous = current.material
        for k in stride(from: 1, through: options.ratchetWindow, by: 1) {
            let cached = state.withLock { s in s.generation == generation && s.ahead.count >= k ? s.ahead[k - 1] : nil }
            let step: Step
            if let cached {
                step = cached
            } else {
                step = derive(from: previous)
                state.withLock { s in
                    if s.generation == generation, s.ahead.count == k - 1 { s.ahead.append(step) }
                }
            }
            if attempt(step.pool) {
                state.withLock { s in
                    guard s.generation == generation, s.ahead.count >= k else { return }
                    s.current = s.ahead[k - 1]
                    s.ahead.removeFirst(k)
                    s.generation += 1
                }
                return k
            }
            previous = step.material
        }
        return nil
    }

    private func derive(from material: [UInt8]) -> Step {
        derivedSteps.add(1, ordering: .relaxed)
        return Self.step(Self.ratchetMaterial(material, salt: options.ratchetSalt), salt: options.ratchetSalt)
    }

    private static func step(_ material: [UInt8], salt: [UInt8]) -> Step {
        Step(material: material, pool: AEADPool(key: deriveAESKey(material: material, salt: salt)))
    }
}
