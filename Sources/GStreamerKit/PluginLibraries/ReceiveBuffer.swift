internal import CPluginLibraries
internal import CGStreamerShims
import Locking

extension WebRTCBin {
    /// The receive buffer the media sockets hold after `enlargeReceiveBuffers`.
    public struct ReceiveBuffer: Sendable, Equatable {
        /// Sockets set (one with BUNDLE and rtcp-mux).
        public let sockets: Int
        /// The least any of them holds, in bytes (the kernel doubles what is asked).
        public let bytes: Int
    }

    /// Asks `bytes` of receive buffer for each socket libnice selected (CPluginLibraries'
    /// receive_buffer.c says why); nil before ICE selected one, or without a libnice agent.
    /// Past net.core.rmem_max only with CAP_NET_ADMIN: `bytes` of the answer says what held.
    /// Off the pool: libnice's agent lock may be held by its own thread.
    public func enlargeReceiveBuffers(to bytes: Int) async -> ReceiveBuffer? {
        let element = self.element
        return await OffPool.run {
            var smallest: Int32 = 0
            let sockets = sfb_webrtc_enlarge_receive_buffers(element.pointer, Int32(clamping: bytes), &smallest)
            return sockets > 0 ? ReceiveBuffer(sockets: Int(sockets), bytes: Int(smallest)) : nil
        }
    }

    /// Packets the kernel dropped on the selected sockets since they were opened, because the
    /// receive buffer was full (from /proc's UDP table); nil before ICE selected one.
    public func receiveDrops() async -> Int? {
        let element = self.element
        return await OffPool.run {
            let drops = sfb_webrtc_receive_drops(element.pointer)
            return drops >= 0 ? Int(drops) : nil
        }
    }
}

extension WebRTCBin {
    /// Packets its jitter buffers gave up waiting for (never arrived, not repaired by a
    /// retransmission), summed over the buffers there are now; off the pool (each buffer's
    /// lock).
    public func jitterBuffersLost() async -> Int {
        let element = self.element
        return await OffPool.run { Int(clamping: sfb_jitterbuffers_lost(element.pointer)) }
    }

    /// Packets its jitter buffers asked for again (NACK) and got, summed over the buffers there
    /// are now; off the pool.
    public func jitterBuffersRepaired() async -> Int {
        let element = self.element
        return await OffPool.run { Int(clamping: sfb_jitterbuffers_repaired(element.pointer)) }
    }

    /// The direct receive path's first packets, held until lip sync (sfbreorder), go out now:
    /// before a recording's branches are cut off, so what arrived reaches the files. Off the
    /// pool (each send waits for the stream's packet in flight).
    @discardableResult
    public func releaseHeldPackets() async -> Int {
        let element = self.element
        return await OffPool.run { Int(sfb_reorders_release_held(element.pointer)) }
    }
}

/// What the direct receive path's reorder element (sfbreorder) says on the bus.
public enum SfbReorder {
    /// The name of its element message at a video stream's first packet, before the lip-sync hold.
    public static let firstVideoPacket = SFB_REORDER_FIRST_VIDEO_PACKET
}
