import NIOCore
import NIOSSL
import NIOTLS

/// One handler in each channel of a bridged connection (both on one event loop): what one side
/// reads the other writes; a side that closes or fails closes the other; a side that cannot
/// write as fast as the other reads stops that reading (swift-nio's connect-proxy GlueHandler).
final class GlueHandler: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    private init() {}

    static func pair() -> (GlueHandler, GlueHandler) {
        let a = GlueHandler(), b = GlueHandler()
        a.partner = b
        b.partner = a
        return (a, b)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    // Breaks the pair's reference cycle.
    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { partner?.context?.write(data, promise: nil) }
    func channelReadComplete(context: ChannelHandlerContext) { partner?.context?.flush() }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        partner?.context?.close(promise: nil)
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let partner, partner.pendingRead {
            partner.pendingRead = false
            partner.context?.read()
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.context?.channel.isWritable == true { context.read() } else { pendingRead = true }
    }
}

/// Sits after the TLS handler of the connection to the TURN server until its handshake ends:
/// then glues it to libnice's connection and lets that one read (it read nothing before, so
/// no TURN byte waits in a buffer of ours); a failed handshake closes both and is kept.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let inbound: any Channel
    private let accepted: ContinuousClock.Instant
    private let state: TURNTLSBridge.State
    private var settled = false

    init(inbound: any Channel, accepted: ContinuousClock.Instant, state: TURNTLSBridge.State) {
        self.inbound = inbound
        self.accepted = accepted
        self.state = state
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case TLSUserEvent.handshakeCompleted = event, !settled else { return context.fireUserInboundEventTriggered(event) }
        settled = true
        state.connected()
        let (ours, theirs) = GlueHandler.pair()
        do {
            try context.pipeline.syncOperations.addHandler(ours)
            // Both channels are on this event loop (the connection was made on libnice's).
            try inbound.pipeline.syncOperations.addHandler(theirs)
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
            inbound.setOption(ChannelOptions.autoRead, value: true).whenFailure { [inbound] _ in inbound.close(promise: nil) }
        } catch {
            context.close(promise: nil)
            inbound.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !settled {
            settled = true
            state.failed(error, accepted: accepted)
        }
        context.close(promise: nil)
        inbound.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !settled {
            settled = true
            state.failed(nil, accepted: accepted)
        }
        inbound.close(promise: nil)
        context.fireChannelInactive()
    }
}
