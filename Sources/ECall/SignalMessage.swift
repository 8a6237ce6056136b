public import Foundation

/// A signal message on ECall's STOMP exchanges (ECALL-WIRE §7): a `type` and optional fields;
/// ids are integers.
public struct SignalMessage: Codable, Sendable, Equatable {
    public var type: String
    public var callerId: Int64?
    public var callerDeviceId: Int64?
    public var callerName: String?
    public var encryptedAESKey: String?
    public var calleeId: Int64?
    public var calleeDeviceId: Int64?
    public var participantId: Int64?
    public var participantDeviceId: Int64?
    public var participantName: String?
    public var callId: Int64?
    public var roomId: Int64?
    public var status: String?
    public var feedId: Int64?
    public var isVideo: Bool?
    public var isVideoEnabled: Bool?
    public var isMuted: Bool?
    public var isOnGoing: Bool?
    /// Unix seconds at which a rotated key becomes current.
    public var keyRotationTimestamp: Double?
    public var senderId: Int64?
    public var senderDeviceId: Int64?

    public init(type: Kind) { self.type = type.rawValue }

    /// The types the apps know. They drop a whole message of any other type, so the bot sends
    /// only these.
    public enum Kind: String, Sendable, CaseIterable {
        case callInvitation = "call_invitation"
        case participantJoined = "participant_joined"
        case participantUpdated = "participant_updated"
        case participantFeedIdUpdated = "participant_feedId_updated"
        case participantInvited = "participant_invited"
        case participantLeft = "participant_left"
        case participantRejected = "participant_rejected"
        case callEnded = "call_ended"
        case callCancelled = "call_cancelled"
        case handoverHost = "handover_host"
        case participantRequestRejoin = "participant_request_rejoin"
        case participantAcceptRejoin = "participant_accept_rejoin"
        case keyRotation = "key_rotation"
        case requestAESKey = "request_aes_key"
        case sendAESKey = "send_aes_key"
    }

    public var kind: Kind? { Kind(rawValue: type) }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notJSON
        case unknownType(String)
        public var description: String {
            switch self {
            case .notJSON: "not a JSON signal message"
            case .unknownType(let t): "unknown signal type '\(t.prefix(40))'"
            }
        }
    }

    /// Decodes a message body; unknown types are an error (counted and dropped by callers).
    public static func parse(_ body: Data) throws(ParseError) -> SignalMessage {
        guard let m = try? JSONDecoder().decode(SignalMessage.self, from: body) else { throw .notJSON }
        guard m.kind != nil else { throw .unknownType(m.type) }
        return m
    }

    public var json: Data { (try? JSONEncoder().encode(self)) ?? Data() }
}
