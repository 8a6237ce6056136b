import ArgumentParser
import Bot

/// `--pipelines`: the folder of pipeline descriptions, for every command that runs GStreamer.
struct PipelineOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Folder of pipeline descriptions (default: ./pipelines, $SFUBOT_PIPELINES, or the checkout's).", valueName: "dir"))
    var pipelines: String?

    func library() throws(BotError) -> PipelineLibrary { try PipelineLibrary(directory: pipelines) }
}
