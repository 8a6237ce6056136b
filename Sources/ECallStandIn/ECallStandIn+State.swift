import Foundation
import Locking

/// The backend's memory: users, devices, tokens, calls. Guarded by the stand-in's one Mutex.
extension ECallStandIn {
    struct Device { var userId: Int64; var deviceId: Int64; var publicKey: String }
    struct Token { var userId: Int64; var deviceId: Int64; var expires: Date }
    struct Call {
        var id: Int64, roomId: Int64, callerId: Int64, callerDeviceId: Int64, isVideo: Bool
        var keys: [String: String]
        var participants: [Int64: String]  // userId → status
        /// The device each participant joined (or asked to rejoin) with: where its signals go.
        var devices: [Int64: Int64] = [:]  // userId → deviceId
        /// The Janus room the call's CallRecord names; a test may move it (`moveCall`).
        var janusRoomId: Int64
        var ended = false
    }

    struct State {
        var users: [String: Int64] = [:]
        var devices: [String: Device] = [:]  // identifier → device
        var tokens: [String: Token] = [:]
        var refreshTokens: [String: (Int64, Int64)] = [:]
        var brokerTokens: [String: (deviceId: Int64, expires: Date)] = [:]
        var calls: [Int64: Call] = [:]
        var next: Int64 = 1000
        var counters = Counters()
        /// Every REST request answered, oldest first (the last `restCallLimit`).
        var restCalls: [RESTCall] = []
        mutating func id() -> Int64 { next += 1; return next }
    }
}
