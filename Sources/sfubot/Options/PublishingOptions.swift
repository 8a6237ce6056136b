import ArgumentParser
import Foundation
import Logging
import ObjectStore
import Service
import Webhooks

/// serve's `--storage`, `--s3-endpoint`, `--s3-credentials-file`, `--webhook-url`,
/// `--webhook-secret-file` (docs/object-storage.md).
struct PublishingOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Upload every finished recording's folder (files, manifest.json, proof) to s3://bucket/prefix/<job id>/, through a queue in --state-dir that survives restarts; a local file is deleted once its object is verified. Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN) or --s3-credentials-file; region: AWS_REGION (default us-east-1).", valueName: "s3://bucket/prefix"))
    var storage: String?

    @Option(help: ArgumentHelp("An S3-compatible store's URL (MinIO, Ceph, ...): requests go path-style to it instead of AWS.", valueName: "url"))
    var s3Endpoint: String?

    @Option(help: ArgumentHelp("A 0600 file of AWS_ACCESS_KEY_ID=..., AWS_SECRET_ACCESS_KEY=... (AWS_SESSION_TOKEN=...) lines, or an AWS credentials file (its [default] profile); instead of the environment.", valueName: "file"))
    var s3CredentialsFile: String?

    @Option(help: ArgumentHelp("POST Standard Webhooks to this URL: job.started, job.finished (files, sizes, SHA-256, object URLs), job.failed (reason), upload.failed, relay.started/reconnecting/ended; retried with backoff for up to a day, through an outbox in --state-dir (with --database, in the database: delivered by any live instance, in order per job). Needs --webhook-secret-file.", valueName: "url"))
    var webhookURL: String?

    @Option(help: ArgumentHelp("A 0600 file holding the webhook signing secret, whsec_<base64 of 24-64 random bytes>.", valueName: "file"))
    var webhookSecretFile: String?

    func validate() throws {
        if s3Endpoint != nil || s3CredentialsFile != nil, storage == nil { throw ValidationError("--s3-endpoint and --s3-credentials-file need --storage") }
        if (webhookURL == nil) != (webhookSecretFile == nil) { throw ValidationError("--webhook-url and --webhook-secret-file go together") }
    }

    /// The publishing serve runs, or nil when neither storage nor webhooks are asked for.
    func make(stateDirectory: String?, logger: Logger) throws -> JobPublishing? {
        guard storage != nil || webhookURL != nil else { return nil }
        guard let stateDirectory else {
            throw CLIFailure("--storage and --webhook-url need --state-dir: their queues are kept there, to survive restarts", code: .config)
        }
        do {
            let client: S3Client? = try storage.map { storage in
                let location = try S3Location(storage: storage, endpoint: s3Endpoint)
                let credentials = try s3CredentialsFile.map { try S3Credentials.read(file: $0) } ?? S3Credentials.fromEnvironment()
                guard let credentials else {
                    throw CLIFailure("--storage needs credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or --s3-credentials-file", code: .config)
                }
                logger.info("uploading finished recordings to \(location) with \(credentials)")
                return S3Client(location: location, credentials: credentials)
            }
            let webhook = try webhookURL.map { text in
                guard let url = URL(string: text) else { throw CLIFailure("--webhook-url \(text) is not a URL", code: .config) }
                return (url: url, secret: try WebhookSecret.read(file: webhookSecretFile!))
            }
            return try JobPublishing(stateDirectory: URL(fileURLWithPath: stateDirectory), storage: client, webhook: webhook, logger: logger)
        } catch let error as CLIFailure {
            throw error
        } catch {
            throw CLIFailure("\(error)", code: .config)
        }
    }
}
