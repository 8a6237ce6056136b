import ArgumentParser
import Bot
import Janus
import Logging

/// What a participant command (record, play, load) needs to be in a room: the Janus, the
/// room, coming back, pipelines, logging. Made of the groups every command shares.
struct ConnectionOptions: ParsableArguments {
    @OptionGroup var server: JanusOptions

    @Option(help: "VideoRoom room id.")
    var room: Int64

    @OptionGroup var ice: ICEOptions
    @OptionGroup var comeback: ComebackOptions
    @OptionGroup var pipeline: PipelineOptions
    @OptionGroup var log: LogOptions

    var janus: String { server.janus }
    var pipelines: String? { pipeline.pipelines }

    /// Session options: a dropped WebSocket is reconnected and the session claimed within the rejoin timeout.
    var sessionOptions: JanusSession.Options {
        var o = server.sessionOptions
        o.reclaimWindow = comeback.duration
        return o
    }

    func logger(_ label: String) -> Logger { log.logger(label) }

    func botConfig(display: String, protection: FrameProtection, label: String) throws -> BotConfig {
        var config = BotConfig(
            janusURL: janus, room: room, display: display, protection: protection,
            janus: server.sessionOptions, pipelines: try pipeline.library(), logger: logger(label))
        config.rejoinTimeout = comeback.duration
        config.ice = try ice.servers()
        return config
    }
}
