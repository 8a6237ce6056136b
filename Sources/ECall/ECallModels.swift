import Foundation

/// Who the bot logs in as: ECall's login body (ECALL-WIRE §7).
public struct LoginIdentity: Codable, Sendable {
    public var email: String?
    public var phoneNumber: String?
    public var displayName: String
    public var verified = false
    public var publicKey: String
    public var deviceName = "sfubot"
    public var systemName = "Linux"
    public var systemVersion = "sfubot"
    public var identifier: String
    public var voipToken = ""
    public var apnsToken = ""

    public init(email: String? = nil, phoneNumber: String? = nil, displayName: String, publicKey: String, identifier: String) {
        self.email = email
        self.phoneNumber = phoneNumber
        self.displayName = displayName
        self.publicKey = publicKey
        self.identifier = identifier
    }
}

/// `POST /login`'s answer: the OTP has been sent.
public struct LoginChallenge: Codable, Sendable {
    public var userId: Int64
    public var deviceId: Int64?
}

/// What the bot keeps between runs (a 0600 file): who it is and its tokens.
public struct SessionState: Codable, Sendable, Equatable {
    public var userId: Int64
    public var deviceId: Int64
    public var accessToken: String
    public var refreshToken: String
}

/// `GET /credentials`.
public struct Credentials: Codable, Sendable {
    public var tlsUrl: String?
    public var noneTlsUrl: String?
    public var turnUsername: String?
    public var turnPassword: String?
    public var rabbitmqToken: String
    /// Unix seconds.
    public var rabbitmqTokenExpiresAt: Double?
}

/// A call as the backend describes it.
public struct CallRecord: Codable, Sendable {
    public var id: Int64
    public var janusRoomId: Int64?
    public var roomId: Int64?
    public var callerId: Int64?
    public var callerDeviceId: Int64?
    public var isVideo: Bool?
    public var status: String?
    /// `GET /call/active`: this device's wrapped call key, when the backend includes it (unverified).
    public var encryptedAESKey: String?
}

/// `POST /call/start` and `/call/{id}/invite`.
public struct CallInvitationBody: Codable, Sendable {
    public var roomId: Int64
    public var calleeIds: [Int64]
    /// `"<userId>_<deviceId>"` → the call key wrapped for that device.
    public var encryptedAESKeys: [String: String]
    public var isVideo: Bool

    public init(roomId: Int64, calleeIds: [Int64], encryptedAESKeys: [String: String], isVideo: Bool) {
        self.roomId = roomId
        self.calleeIds = calleeIds
        self.encryptedAESKeys = encryptedAESKeys
        self.isVideo = isVideo
    }
}

/// `GET /call/{id}/participants`.
public struct Participant: Codable, Sendable {
    public var userId: Int64
    public var deviceId: Int64?
    public var isHostKey: Bool?
    public var feedId: Int64?
    public var status: String?
}
