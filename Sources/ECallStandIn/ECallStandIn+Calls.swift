import ECall
import Foundation
import HTTPTypes
import Logging
import Synchronization
import Locking

/// `/call/{id}/...`: invite, join, participants, and the rejoin pair (ECALL-WIRE §7). Only a
/// participant of a call that has not ended may act on it.
extension ECallStandIn {
    func callAction(_ method: String, _ action: String, callID id: Int64, json: [String: Any], me: Token) async throws -> Any {
        // Filled under the lock for `request-rejoin`, sent after it: (device, message).
        var rejoinRequests: [(Int64, [String: Any])] = []
        let result: Any = try state.withLock { s in
            guard var call = s.calls[id], !call.ended else { throw Failure(status: .notFound, code: "ErrCallNotFound", detail: "no active call \(id)") }
            guard let status = call.participants[me.userId] else {
                throw Failure(status: .forbidden, code: "ErrNotParticipant", detail: "user \(me.userId) is not in call \(id)")
            }
            switch (method, action) {
            case ("POST", "invite"):
                for u in (json["calleeIds"] as? [Any])?.compactMap({ ($0 as? NSNumber)?.int64Value }) ?? [] where call.participants[u] == nil { call.participants[u] = "invited" }
                for (k, v) in json["encryptedAESKeys"] as? [String: String] ?? [:] { call.keys[k] = v }
            case ("POST", "join"):
                call.participants[me.userId] = "joined"
                call.devices[me.userId] = me.deviceId
            case ("POST", "request-rejoin"):
                // The backend marks the participant and asks every other connected participant
                // (the rejoin flow of the apps' docs) for the key: `participantId` and
                // `calleeDeviceId` name the device to wrap it for, as the apps read them.
                call.participants[me.userId] = "rejoining"
                call.devices[me.userId] = me.deviceId
                for (user, st) in call.participants where user != me.userId && st == "joined" {
                    guard let device = call.devices[user] else { continue }
                    rejoinRequests.append((device, ["type": "participant_request_rejoin", "callId": id, "participantId": me.userId,
                                                    "calleeId": me.userId, "calleeDeviceId": me.deviceId]))
                }
            case ("POST", "rejoin"):
                // Our reading: a rejoin follows a request-rejoin of the same device (the
                // participants answered it with the key).
                guard status == "rejoining", call.devices[me.userId] == me.deviceId else {
                    throw Failure(status: .conflict, code: "ErrNoRejoinRequest", detail: "request-rejoin first")
                }
                call.participants[me.userId] = "joined"
            case ("GET", "participants"):
                let list = call.participants.sorted { $0.key < $1.key }.map { user, status -> [String: Any] in
                    let device = call.devices[user] ?? s.devices.values.first { $0.userId == user }?.deviceId ?? 0
                    return ["userId": user, "deviceId": device, "isHostKey": user == call.callerId, "status": status]
                }
                return ["participants": list]
            default: throw Failure(status: .notFound, code: "ErrNotFound", detail: "\(method) /call/\(id)/\(action)")
            }
            s.calls[id] = call
            return record(call, for: me)
        }
        for (device, message) in rejoinRequests { await sendSignal(message, to: device) }
        return result
    }

    /// Sends a message of the backend's own to one device (needs `startRouting`).
    func sendSignal(_ message: [String: Any], to device: Int64) async {
        guard let client = router.withLock({ $0 }), let body = try? JSONSerialization.data(withJSONObject: message) else {
            state.withLock { $0.counters.rejoinRequestsUnsent += 1 }
            return
        }
        do {
            try await client.send("/exchange/ecall.signal.out/\(device)", body: body, headers: [("content-type", "application/json")])
            state.withLock { $0.counters.rejoinRequestsSent += 1 }
        } catch {
            state.withLock { $0.counters.rejoinRequestsUnsent += 1 }
            log.warning("could not send participant_request_rejoin to device \(device): \(error)")
        }
    }
}
