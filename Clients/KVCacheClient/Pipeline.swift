import Foundation
import RESP

/// Commands queued to go to the server in one write (see
/// `KVCacheClient.pipeline(_:)`). Each typed call returns a `Pending` whose
/// `get()` gives its typed reply once the pipeline has run.
public final class Pipeline {
    private(set) var commands: [[[UInt8]]] = []
    /// The replies, once the pipeline has run.
    var replies: [RESPValue]?

    public init() {}

    /// How many commands are queued.
    public var count: Int { commands.count }

    func add<T>(_ call: Call<T>) -> Pending<T> {
        commands.append(call.arguments)
        return Pending(pipeline: self, index: commands.count - 1, call: call)
    }

    /// Queues any command.
    @discardableResult
    public func command(_ arguments: [[UInt8]]) -> Pending<RESPValue> {
        add(Commands.raw(arguments))
    }

    /// Queues any command given as strings.
    @discardableResult
    public func command(_ arguments: String...) -> Pending<RESPValue> {
        command(arguments.map { Array($0.utf8) })
    }

    /// Queues `KVCACHE.GET key`: the whole entry, or nil.
    @discardableResult
    public func get(key: [UInt8]) -> Pending<KVCacheClient.Entry?> {
        add(Commands.entry(key))
    }

    /// Queues `KVCACHE.PUT key storage-date-ms metadata value [expiry]`.
    @discardableResult
    public func put(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8],
                    expiry: Expiry? = nil) -> Pending<Void> {
        add(Commands.putEntry(key, storageDate: storageDate, metadata: metadata, value: value, expiry: expiry))
    }
}

/// The reply of one pipelined command, readable after the pipeline has run.
public struct Pending<T> {
    let pipeline: Pipeline
    let index: Int
    let call: Call<T>

    /// The raw reply. Reading it before the pipeline has run is a programming error.
    public var reply: RESPValue {
        guard let replies = pipeline.replies else {
            preconditionFailure("a pipelined reply was read before the pipeline ran")
        }
        return replies[index]
    }

    /// The typed reply.
    /// - Throws: `.server` when the command failed; `.protocolViolation` for
    ///   a reply of the wrong type.
    public func get() throws(KVCacheClientError) -> T {
        try call.decode(reply)
    }
}
