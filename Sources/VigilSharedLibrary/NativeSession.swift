internal import CVigilPluginABI
import Glibc
import Logging
import VigilCore
import VigilLibraryCheck
import VigilPlugin

/// One run of a shared-library plugin: its libraries mapped, the descriptor checked again in
/// memory, `init` called, the keep-alive interface taken and one instance created. All C calls
/// go through here, on the plugin's own thread, never concurrently.
final class NativeSession {
    let set: VerifiedLibrarySet
    let context: PluginContext
    private var libraries: [SealedLibrary] = []
    private var entry = vigil_plugin_descriptor()
    private var initialised = false
    private var interface = vigil_keepalive_v1()
    private var instance: UnsafeMutableRawPointer?
    private var hostTable: UnsafeMutablePointer<vigil_host>?
    private var hostName: UnsafeMutablePointer<CChar>?
    private var hostBox: Unmanaged<HostBox>?
    private var eventsTable: UnsafeMutablePointer<vigil_keepalive_events>?
    private var eventsBox: Unmanaged<EventBox>?

    static let errorSize = 1024

    init(set: VerifiedLibrarySet, context: PluginContext) {
        self.set = set
        self.context = context
    }

    private func fail(_ code: SharedLibraryError.Code, _ message: String) -> SharedLibraryError {
        SharedLibraryError(code: code, plugin: set.plugin, message: message)
    }

    /// Maps, initialises and creates the instance. On error everything done so far is undone.
    func open() throws(SharedLibraryError) {
        do {
            try mapAndInit()
            try create()
        } catch {
            close()
            throw error
        }
    }

    private func mapAndInit() throws(SharedLibraryError) {
        let keep = set.descriptor.flags & VIGIL_PLUGIN_FLAG_KEEP_LOADED != 0
        for dependency in set.dependencies {
            libraries.append(try SealedLibrary.open(dependency, plugin: set.plugin, keepLoaded: keep))
        }
        let main = try SealedLibrary.open(set.main, plugin: set.plugin, keepLoaded: keep)
        libraries.append(main)
        for (library, sealed) in zip(set.dependencies + [set.main], libraries) {
            context.logger.debug(
                "mapped \(library.path) (SONAME \(library.soname), sha256 \(library.sha256)) from \(sealed.path)")
        }

        guard let raw = main.ownSymbol(ELFImage.entrySymbol) else {
            throw fail(
                .missingDescriptor,
                "\(set.main.path) mapped, but its \(ELFImage.entrySymbol) does not resolve inside it — export the "
                    + "descriptor from the plugin's own library")
        }
        // The header again, from memory: it must be what was checked in the bytes.
        let header = ELFImage.DescriptorHeader(
            magic: raw.loadUnaligned(as: UInt32.self), abiMajor: raw.loadUnaligned(fromByteOffset: 4, as: UInt16.self),
            abiMinor: raw.loadUnaligned(fromByteOffset: 6, as: UInt16.self),
            structSize: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self),
            flags: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self), symbolSize: set.descriptor.symbolSize)
        guard header == set.descriptor else {
            throw fail(
                .missingDescriptor,
                "the \(ELFImage.entrySymbol) of \(set.main.path) changed between its file bytes and its mapping "
                    + "(a constructor wrote to it?) — the descriptor must be const")
        }
        entry = Self.loadGrowable(raw, declaredSize: Int(header.structSize), as: vigil_plugin_descriptor.self)
        guard let initFunction = entry.`init`, entry.get_interface != nil, entry.deinit != nil else {
            throw fail(
                .missingDescriptor,
                "the \(ELFImage.entrySymbol) of \(set.main.path) leaves init, deinit or get_interface empty — all three "
                    + "are required")
        }

        let box = HostBox(logger: context.logger)
        hostBox = Unmanaged.passRetained(box)
        hostName = strdup(context.hostName)
        let table = UnsafeMutablePointer<vigil_host>.allocate(capacity: 1)
        table.initialize(
            to: vigil_host(
                struct_size: UInt32(MemoryLayout<vigil_host>.size), abi_major: VerifiedLibrarySet.abiMajor,
                abi_minor: VerifiedLibrarySet.abiMinor, host_name: UnsafePointer(hostName),
                host_data: hostBox!.toOpaque(), log: hostLog))
        hostTable = table
        guard initFunction(table) else {
            throw fail(
                .initFailed,
                "its init returned false (see the plugin's log lines above) — check its settings and requirements, or "
                    + "report it to the plugin's publisher")
        }
        initialised = true

        guard let id = entry.plugin_id, String(cString: id) == set.plugin else {
            let found = entry.plugin_id.map { Sanitizer.display(String(cString: $0)) } ?? "(none)"
            throw fail(
                .pluginIDMismatch,
                "its library says it is plugin \"\(found)\", but the signed manifest is for \"\(set.plugin)\" — the "
                    + "publisher must set plugin_id to the manifest's name")
        }
    }

    private func create() throws(SharedLibraryError) {
        guard let found = entry.get_interface?(VIGIL_KEEPALIVE_INTERFACE_V1) else {
            throw fail(
                .interfaceMissing,
                "it does not offer the keep-alive interface \"\(VIGIL_KEEPALIVE_INTERFACE_V1)\" — it may be built for "
                    + "another kind of plugin host")
        }
        let size = Int(found.load(as: UInt32.self))
        interface = Self.loadGrowable(found, declaredSize: size, as: vigil_keepalive_v1.self)
        guard size >= MemoryLayout<vigil_keepalive_v1>.size, let createFunction = interface.create,
            interface.start != nil, interface.stop != nil, interface.details != nil, interface.destroy != nil
        else {
            throw fail(
                .interfaceMissing,
                "its \"\(VIGIL_KEEPALIVE_INTERFACE_V1)\" table is \(size) bytes or leaves a function empty; version 1 "
                    + "needs all of create, start, stop, details and destroy")
        }

        let events = EventBox(reporter: context.reporter)
        eventsBox = Unmanaged.passRetained(events)
        let table = UnsafeMutablePointer<vigil_keepalive_events>.allocate(capacity: 1)
        table.initialize(
            to: vigil_keepalive_events(
                struct_size: UInt32(MemoryLayout<vigil_keepalive_events>.size), host_data: eventsBox!.toOpaque(),
                interrupted: eventInterrupted, resumed: eventResumed, resume_failed: eventResumeFailed,
                details_changed: eventDetailsChanged))
        eventsTable = table

        let settings = context.settings.values.sorted { $0.key < $1.key }.map {
            (strdup($0.key), strdup(Self.text($0.value)))
        }
        defer { for (k, v) in settings { free(k); free(v) } }
        let array = settings.map { vigil_setting(key: UnsafePointer($0.0), value: UnsafePointer($0.1)) }
        let plugin = strdup(context.pluginName), host = strdup(context.hostName), state = strdup(context.stateDirectory)
        defer { free(plugin); free(host); free(state) }
        var error = [CChar](repeating: 0, count: Self.errorSize)
        let made = array.withUnsafeBufferPointer { buffer in
            var config = vigil_keepalive_config(
                struct_size: UInt32(MemoryLayout<vigil_keepalive_config>.size), plugin_name: plugin, host_name: host,
                state_directory: state, setting_count: buffer.count, settings: buffer.baseAddress)
            return createFunction(&config, table, &error, error.count)
        }
        guard let made else {
            throw fail(.createFailed, "it could not be created: \(Self.message(error))")
        }
        instance = made
    }

    /// Starts the instance.
    func start() throws(SharedLibraryError) {
        guard let instance, let start = interface.start else { return }
        var error = [CChar](repeating: 0, count: Self.errorSize)
        guard start(instance, &error, error.count) else {
            throw fail(.startFailed, "it failed to start: \(Self.message(error))")
        }
    }

    /// Stops the instance (after any `start`, even one that failed).
    func stop() {
        guard let instance else { return }
        interface.stop?(instance)
    }

    /// The instance's details.
    func details() -> [String: String] {
        guard let instance, let details = interface.details else { return [:] }
        let collector = DetailCollector()
        let box = Unmanaged.passRetained(collector)
        defer { box.release() }
        details(instance, detailSink, box.toOpaque())
        return collector.values
    }

    /// Destroys the instance, calls `deinit` and unmaps (or releases) the libraries.
    func close() {
        if let instance {
            interface.destroy?(instance)
            self.instance = nil
        }
        if let eventsTable {
            eventsTable.deallocate()
            self.eventsTable = nil
        }
        eventsBox?.release()
        eventsBox = nil
        if initialised {
            entry.deinit?()
            initialised = false
        }
        for library in libraries.reversed() { library.close() }
        libraries = []
        if let hostTable {
            hostTable.deallocate()
            self.hostTable = nil
        }
        free(hostName)
        hostName = nil
        hostBox?.release()
        hostBox = nil
    }

    /// Reads a struct that carries its size: the fields that fit in `declaredSize`, the rest zero.
    static func loadGrowable<T>(_ raw: UnsafeRawPointer, declaredSize: Int, as type: T.Type) -> T {
        let storage = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<T>.size, alignment: MemoryLayout<T>.alignment)
        defer { storage.deallocate() }
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.size)
        storage.copyMemory(from: raw, byteCount: min(max(declaredSize, 0), MemoryLayout<T>.size))
        return storage.load(as: T.self)
    }

    /// A setting as the C ABI passes it: strings as they are, scalars as text, arrays and tables as JSON.
    static func text(_ value: SettingValue) -> String {
        switch value {
        case .string(let s): s
        case .integer(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): b ? "true" : "false"
        case .array, .table: json(value)
        }
    }

    private static func json(_ value: SettingValue) -> String {
        switch value {
        case .string(let s): JSONValue.quote(s)
        case .integer(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): b ? "true" : "false"
        case .array(let a): "[" + a.map(json).joined(separator: ",") + "]"
        case .table(let t):
            "{"
                + t.sorted { $0.key < $1.key }.map { JSONValue.quote($0.key) + ":" + json($0.value) }.joined(
                    separator: ",") + "}"
        }
    }

    /// The NUL-terminated error text a plugin wrote, sanitised, or a note that it wrote none.
    static func message(_ buffer: [CChar]) -> String {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let text = Sanitizer.display(String(decoding: bytes, as: UTF8.self))
        return text.isEmpty ? "the plugin gave no reason" : text
    }
}

/// What `vigil_host.host_data` points at.
final class HostBox {
    let logger: Logger
    init(logger: Logger) { self.logger = logger }
}

/// What `vigil_keepalive_events.host_data` points at.
final class EventBox {
    let reporter: PluginReporter
    init(reporter: PluginReporter) { self.reporter = reporter }
}

/// Collects `details` pairs.
final class DetailCollector {
    var values: [String: String] = [:]
}

private func hostLog(_ host: UnsafePointer<vigil_host>?, _ level: Int32, _ message: UnsafePointer<CChar>?) {
    guard let host, let data = host.pointee.host_data, let message else { return }
    let logger = Unmanaged<HostBox>.fromOpaque(data).takeUnretainedValue().logger
    let text = Sanitizer.display(String(cString: message))
    let level: Logger.Level =
        switch Int(level) {
        case Int(VIGIL_LOG_DEBUG): .debug
        case Int(VIGIL_LOG_INFO): .info
        case Int(VIGIL_LOG_WARNING): .warning
        default: .error
        }
    logger.log(level: level, "\(text)")
}

private func events(_ data: UnsafeMutableRawPointer?) -> PluginReporter? {
    data.map { Unmanaged<EventBox>.fromOpaque($0).takeUnretainedValue().reporter }
}

private func reason(_ text: UnsafePointer<CChar>?) -> String {
    text.map { Sanitizer.display(String(cString: $0)) } ?? "no reason given"
}

private func eventInterrupted(_ data: UnsafeMutableRawPointer?, _ why: UnsafePointer<CChar>?) {
    events(data)?.report(.interrupted(reason: reason(why)))
}

private func eventResumed(_ data: UnsafeMutableRawPointer?) {
    events(data)?.report(.resumed)
}

private func eventResumeFailed(_ data: UnsafeMutableRawPointer?, _ why: UnsafePointer<CChar>?) {
    events(data)?.report(.resumeFailed(reason: reason(why)))
}

private func eventDetailsChanged(_ data: UnsafeMutableRawPointer?) {
    events(data)?.report(.detailsChanged)
}

private func detailSink(
    _ context: UnsafeMutableRawPointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?
) {
    guard let context, let key, let value else { return }
    let collector = Unmanaged<DetailCollector>.fromOpaque(context).takeUnretainedValue()
    collector.values[Sanitizer.display(String(cString: key))] = Sanitizer.display(String(cString: value))
}
