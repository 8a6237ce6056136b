import GStreamerKit
import Janus

extension RelayRoom: RoomFollower {
    func cameBack() {
        if input != nil, peer != nil { status.set(.sending) }
    }

    /// What is left of a lost session: the PeerConnection (its feeds are subscribed again on
    /// the next session), the roster and the session itself; the output stays. Nothing is
    /// announced: a lost session would hold each request for its timeout.
    func dropSession() async {
        feeds = []
        if let peer {
            self.peer = nil
            await peer.close(announce: false)
            input?.forgetPeer()
        }
        await roster?.leave(announce: false)
        roster = nil
        await session?.close()
        session = nil
    }
}
