internal import CVigilHelper
internal import CVigilPluginABI
import Glibc
import Logging
import VigilBase
import VigilConfine
import VigilCore
import VigilLibraryCheck
import VigilPlugin

/// One run of a shared-library plugin in a `vigil-plugin-helper` process of its own: the helper
/// started with a fresh exec, the confinement compiled from the signed manifest's capabilities
/// sent (and applied by the helper to itself: Landlock, seccomp, no_new_privs), the verified libraries sent as sealed memfds and mapped there, the
/// descriptor checked again in the helper's memory, `init` and `create` called there; then
/// start, stop, details and destroy as requests, each answered within a deadline.
///
/// Everything runs on the plugin's ``PollLoop`` thread (the thread that started the helper, so
/// its `PR_SET_PDEATHSIG` means "dies with this thread"). Between requests the loop watches the
/// socket: the plugin's events and log lines arrive there, and end-of-file is the helper's end.
final class HelperSession {
    /// How long the host waits for each answer before it kills the helper.
    struct Deadlines: Sendable {
        /// Policy, a library, create, start, stop, destroy (plugin code that may do real work).
        var lifecycle: Double = 10
        /// `details` (must answer at once: `vigil status` waits for it).
        var details: Double = 2
        /// From end-of-file (or the kill) to the helper's exit.
        var exit: Double = 2
    }

    /// What the helper confines itself to: the signed manifest's capabilities, and whether the
    /// operator accepted a kernel that cannot enforce all of it (`[confinement] acknowledge_unenforced`).
    struct Confinement: Sendable {
        var capabilities: PluginCapabilities
        var acknowledgedUnenforced: Bool
        /// What the kernel can enforce; `nil`: probe the running kernel when the helper starts.
        var support: ConfinementSupport?

        init(capabilities: PluginCapabilities, acknowledgedUnenforced: Bool, support: ConfinementSupport? = nil) {
            self.capabilities = capabilities
            self.acknowledgedUnenforced = acknowledgedUnenforced
            self.support = support
        }
    }

    let set: VerifiedLibrarySet
    let context: PluginContext
    let confinement: Confinement
    let deadlines: Deadlines
    /// The helper's PID (0 before it started).
    private(set) var pid: pid_t = 0
    private var socket: Int32 = -1
    private var pidfd: Int32 = -1
    private var watch: PollLoop.Token?
    /// Set once the helper is gone (its end, or a kill after a missed deadline).
    private var ended = false
    /// The confinement denials the helper reported: how many, and the last.
    private(set) var denials = 0
    private(set) var lastDenial: ConfinementDenial?
    /// What `vigil status` says about the confinement, set when the policy is planned.
    private(set) var confinementLine = "not started"
    private var buffer = [UInt8](repeating: 0, count: Int(VIGIL_HELPER_MESSAGE_MAX))

    init(set: VerifiedLibrarySet, context: PluginContext, confinement: Confinement, deadlines: Deadlines) {
        self.set = set
        self.context = context
        self.confinement = confinement
        self.deadlines = deadlines
    }

    deinit {
        if socket >= 0 { Glibc.close(socket) }
        if pidfd >= 0 { Glibc.close(pidfd) }
    }

    private func fail(_ code: SharedLibraryError.Code, _ message: String) -> SharedLibraryError {
        SharedLibraryError(code: code, plugin: set.plugin, message: message)
    }

    /// What `vigil status` shows about the helper beside the plugin's own details.
    var hostDetails: [String: String] {
        var values = ["helper-pid": String(pid), "confinement": confinementLine]
        if denials > 0, let lastDenial {
            values["denials"] = "\(denials), last: \(Sanitizer.display(describe(lastDenial)))"
        }
        return values
    }

    /// A denial in words, with what the manifest would declare to allow it (paths in the state
    /// directory written relative, as the manifest writes them).
    private func describe(_ denial: ConfinementDenial) -> String {
        let allowing =
            denial.capability == .none
            ? "no capability allows it"
            : "it would need \(denial.declaration(stateDirectory: context.stateDirectory))"
        return "\(denial.operation) refused (\(denial.detail)); \(allowing)"
    }

    /// The policy the helper applies to itself: the manifest's capabilities with relative grants in
    /// the plugin's state directory (created 0700 here if missing: a Landlock rule names an existing
    /// directory). Refuses a kernel that cannot enforce all of it unless the operator acknowledged that.
    private func confinementPolicy() throws(SharedLibraryError) -> [UInt8] {
        do throws(CoreError) {
            try StateFile.prepareDirectory(context.stateDirectory, holding: "the plugin's state")
        } catch {
            throw fail(.confinementFailed, "cannot prepare its state directory before confining it: \(error.message)")
        }
        let plan: ConfinementPlan
        do throws(ConfinementError) {
            plan = try ConfinementPlan(
                capabilities: confinement.capabilities, stateDirectory: context.stateDirectory,
                allowUnenforced: confinement.acknowledgedUnenforced)
        } catch {
            throw fail(.confinementFailed, "its confinement cannot be planned: \(error.message)")
        }
        let support = confinement.support ?? ConfinementSupport.probe()
        let missing = support.missing(for: plan)
        if missing.isEmpty {
            confinementLine = "confined (\(support.summary))"
        } else if confinement.acknowledgedUnenforced {
            confinementLine =
                "unenforced (acknowledged: this kernel lacks \(missing.joined(separator: ", ")); \(support.summary))"
        } else {
            throw fail(
                .confinementFailed,
                "this kernel (\(support.summary)) cannot enforce its declared confinement: it lacks "
                    + missing.joined(separator: ", ") + " — run it on Linux 6.12 or later, or accept the weaker "
                    + "confinement with acknowledge_unenforced = [\"\(set.plugin)\"] under [confinement] in vigil.toml")
        }
        return plan.encoded
    }

    // MARK: Lifecycle (on the loop's thread)

    /// Starts the helper, confines it, maps the libraries there and creates the instance. On
    /// error the helper is gone again.
    func open(on loop: PollLoop) throws(SharedLibraryError) {
        do {
            let policy = try confinementPolicy()
            try spawn()
            _ = try request(HelperRecord(VIGIL_HELPER_POLICY).with(policy), "apply its confinement", on: loop)
            for library in set.dependencies + [set.main] {
                let fd = try SealedLibrary.makeSealedMemfd(library, plugin: set.plugin)
                defer { Glibc.close(fd) }
                let reply = try request(
                    HelperRecord(VIGIL_HELPER_LIBRARY).with(library.soname), attaching: fd, "map \(library.path)",
                    on: loop)
                try check(reply, library: library)
                context.logger.debug(
                    "helper \(pid) mapped \(library.path) (SONAME \(library.soname), sha256 \(library.sha256))")
            }
            try check(try request(createRecord(), "create the instance", on: loop), library: set.main)
        } catch {
            close(on: loop)
            throw error
        }
        watch = loop.watch(socket, events: PollLoop.readable) { [weak self] loop, _ in self?.drain(on: loop) }
    }

    /// Starts the instance.
    func start(on loop: PollLoop) throws(SharedLibraryError) {
        try check(try request(HelperRecord(VIGIL_HELPER_START), "start", on: loop), library: set.main)
    }

    /// Stops the instance (after any `start`, even one that failed). A helper that does not answer is killed.
    func stop(on loop: PollLoop) {
        guard !ended else { return }
        do throws(SharedLibraryError) {
            _ = try request(HelperRecord(VIGIL_HELPER_STOP), "stop", on: loop)
        } catch {
            context.logger.warning("\(error.message)")
        }
    }

    /// The instance's details; a helper that does not answer in time is killed (and the plugin fails).
    func details(on loop: PollLoop) -> [String: String] {
        guard !ended else { return [:] }
        do throws(SharedLibraryError) {
            let reply = try request(
                HelperRecord(VIGIL_HELPER_DETAILS), "report details", on: loop, deadline: deadlines.details)
            var values: [String: String] = [:]
            for (key, value) in reply.pairs { values[Sanitizer.display(key)] = Sanitizer.display(value) }
            return values
        } catch {
            // A helper that does not answer was killed: the plugin failed, with the code in the reason.
            failed(on: loop, "\(error.message) (\(error.code.rawValue))")
            return [:]
        }
    }

    /// Destroys the instance and lets the helper exit (killing it when it does not), then reaps it.
    func close(on loop: PollLoop) {
        if let watch {
            loop.remove(watch)
            self.watch = nil
        }
        if !ended && socket >= 0 {
            do throws(SharedLibraryError) {
                _ = try request(HelperRecord(VIGIL_HELPER_DESTROY), "destroy the instance", on: loop)
            } catch {
                context.logger.warning("\(error.message)")
            }
        }
        if socket >= 0 {
            Glibc.close(socket)
            socket = -1
        }
        _ = reap(on: loop)
        ended = true
    }

    // MARK: The helper process

    private func spawn() throws(SharedLibraryError) {
        let path = try HelperExecutable.locate(plugin: set.plugin)
        var pair: [Int32] = [-1, -1]
        let made = vigil_helper_socketpair(&pair)
        guard made == 0 else {
            throw fail(
                .helperFailed,
                "cannot create the socket pair for its helper process: \(SystemCallError("socketpair", errno: made).reason) "
                    + "— check the process's descriptor limit")
        }
        socket = pair[0]
        defer { Glibc.close(pair[1]) }
        let environment = HelperExecutable.environment(context.environment.variables).map { strdup($0) } + [nil]
        defer { for entry in environment { free(entry) } }
        var child: pid_t = 0
        var descriptor: Int32 = -1
        let rc = environment.withUnsafeBufferPointer {
            vigil_helper_spawn(path, pair[1], $0.baseAddress, &child, &descriptor)
        }
        guard rc == 0 else {
            throw fail(
                .helperFailed,
                "cannot start its helper process \(path): \(SystemCallError("posix_spawn", errno: rc).reason) — check "
                    + "that the file is an executable for this machine and the process limits")
        }
        pid = child
        pidfd = descriptor
        context.logger.debug("started helper process \(child) (\(path))")
    }

    /// Waits until the helper exited (killing it after `deadlines.exit`), reaps it and says how it ended.
    @discardableResult
    private func reap(on loop: PollLoop) -> String {
        guard pidfd >= 0 else { return "not started" }
        defer {
            Glibc.close(pidfd)
            pidfd = -1
        }
        var killed = false
        var deadline = MonotonicClock.seconds() + deadlines.exit
        while true {
            var code: Int32 = 0
            var status: Int32 = 0
            let rc = vigil_helper_reap(pidfd, &code, &status)
            if rc == 1 { return Self.describe(code: code, status: status) }
            if rc < 0 { return "cannot be reaped (\(SystemCallError("waitid", errno: rc).reason))" }
            if MonotonicClock.seconds() >= deadline {
                guard !killed else { return "did not exit after SIGKILL" }
                _ = vigil_helper_kill(pidfd, SIGKILL)
                killed = true
                deadline = MonotonicClock.seconds() + deadlines.exit
            }
            _ = loop.wait(for: pidfd, events: PollLoop.readable, until: deadline)
        }
    }

    static func describe(code: Int32, status: Int32) -> String {
        switch code {
        case Int32(CLD_EXITED): "exited with status \(status)"
        case Int32(CLD_DUMPED): "was killed by signal \(status) (\(signalName(status))) and dumped core"
        default: "was killed by signal \(status) (\(signalName(status)))"
        }
    }

    private static func signalName(_ number: Int32) -> String {
        strsignal(number).map { String(cString: $0) } ?? "signal \(number)"
    }

    /// Kills the helper after a missed deadline or a protocol violation and reaps it.
    private func kill(on loop: PollLoop) -> String {
        ended = true
        if pidfd >= 0 { _ = vigil_helper_kill(pidfd, SIGKILL) }
        return reap(on: loop)
    }

    // MARK: Requests

    private struct Reply {
        var code: String
        var variant: String
        var detail: String
        var pairs: [(String, String)]
    }

    private func createRecord() throws(SharedLibraryError) -> HelperRecord {
        var header: [UInt8] = []
        let d = set.descriptor
        withUnsafeBytes(of: d.magic) { header += $0 }
        withUnsafeBytes(of: d.abiMajor) { header += $0 }
        withUnsafeBytes(of: d.abiMinor) { header += $0 }
        withUnsafeBytes(of: d.structSize) { header += $0 }
        withUnsafeBytes(of: d.flags) { header += $0 }
        var record = HelperRecord(VIGIL_HELPER_CREATE).with(header)
        record.put(context.pluginName)
        record.put(context.hostName)
        record.put(context.stateDirectory)
        let settings = context.settings.values.sorted { $0.key < $1.key }
        record.put(UInt32(settings.count))
        for (key, value) in settings {
            record.put(key)
            record.put(SettingText.text(value))
        }
        guard record.fits else {
            throw fail(
                .createFailed,
                "its settings take more than \(VIGIL_HELPER_MESSAGE_MAX) bytes, more than a plugin can be given — "
                    + "shorten them in vigil.toml")
        }
        return record
    }

    /// Sends `record` (with `attaching` as SCM_RIGHTS) and waits for the reply, handing on
    /// whatever else the helper says meanwhile. A helper that ends, does not answer by the
    /// deadline or breaks the protocol is killed and the request fails.
    private func request(
        _ record: HelperRecord, attaching: Int32 = -1, _ what: String, on loop: PollLoop,
        deadline seconds: Double? = nil
    ) throws(SharedLibraryError) -> Reply {
        guard !ended, socket >= 0 else {
            throw fail(.helperDied, "its helper process has ended, so it cannot \(what) — start it again")
        }
        let sent = record.bytes.withUnsafeBytes { vigil_helper_send(socket, $0.baseAddress, $0.count, attaching) }
        if sent != 0 {
            let how = kill(on: loop)
            throw fail(
                .helperDied,
                "its helper process (PID \(pid)) \(how) before it was asked to \(what) (\(SystemCallError("sendmsg", errno: sent).reason)) — "
                    + "see the plugin's log lines above; report it to the plugin's publisher")
        }
        let limit = seconds ?? deadlines.lifecycle
        let deadline = MonotonicClock.seconds() + limit
        while true {
            switch receive() {
            case .message(.reply(let code, let variant, let detail, let pairs)):
                if code == SharedLibraryErrorCode.helperProtocol.rawValue {
                    let how = kill(on: loop)
                    throw fail(
                        .helperProtocol,
                        "its helper process (PID \(pid)) refused the host's request to \(what) (\(Sanitizer.display(detail))) and \(how) — "
                            + "the helper and the host must come from the same Vigil release; reinstall Vigil")
                }
                return Reply(code: code, variant: variant, detail: detail, pairs: pairs)
            case .message(let other):
                handle(other)
                continue
            case .malformed:
                let how = kill(on: loop)
                throw fail(
                    .helperProtocol,
                    "its helper process (PID \(pid)) sent a malformed record and \(how) (killed) — the helper and the "
                        + "host must come from the same Vigil release; reinstall Vigil")
            case .end:
                ended = true
                let how = reap(on: loop)
                throw fail(
                    .helperDied,
                    "its helper process (PID \(pid)) \(how) while it was asked to \(what) — the plugin's code crashed "
                        + "or exited; see the plugin's log lines above, and report it to the plugin's publisher")
            case .none:
                break
            }
            let now = MonotonicClock.seconds()
            if now >= deadline {
                let how = kill(on: loop)
                throw fail(
                    .helperTimeout,
                    "its helper process (PID \(pid)) did not \(what) within \(Self.seconds(limit)) and was killed (it "
                        + "\(how)) — the plugin's code hangs; report it to the plugin's publisher")
            }
            _ = loop.wait(for: socket, events: PollLoop.readable, until: deadline)
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    private enum Received {
        case message(HelperMessage)
        case malformed
        case end
        case none
    }

    /// One record, if one waits (never blocks).
    private func receive() -> Received {
        let n = buffer.withUnsafeMutableBytes { vigil_helper_receive(socket, $0.baseAddress, $0.count) }
        if n == -Int(EAGAIN) || n == -Int(EINTR) { return .none }
        if n == 0 || n == -Int(ECONNRESET) { return .end }
        guard n > 0, let message = HelperMessage(buffer[0..<n]) else { return n < 0 ? .end : .malformed }
        return .message(message)
    }

    /// Between requests: what the helper says on its own, and its end.
    private func drain(on loop: PollLoop) {
        while !ended {
            switch receive() {
            case .message(.reply):
                let how = kill(on: loop)
                failed(
                    on: loop,
                    "its helper process (PID \(pid)) sent an answer nobody asked for and was killed (it \(how))")
            case .message(let other):
                handle(other)
            case .malformed:
                let how = kill(on: loop)
                failed(on: loop, "its helper process (PID \(pid)) sent a malformed record and was killed (it \(how))")
            case .end:
                ended = true
                failed(
                    on: loop,
                    "its helper process (PID \(pid)) \(reap(on: loop)) (\(SharedLibraryErrorCode.helperDied.rawValue)) — the "
                        + "plugin's code crashed or exited; see its log lines, and report it to the plugin's publisher")
            case .none:
                return
            }
        }
    }

    /// The helper ended (or was killed) while the plugin ran: the plugin failed, for `reason`.
    private func failed(on loop: PollLoop, _ reason: String) {
        if let watch {
            loop.remove(watch)
            self.watch = nil
        }
        context.reporter.report(.resumeFailed(reason: reason))
    }

    private func handle(_ message: HelperMessage) {
        switch message {
        case .reply: break
        case .event(let kind, let reason):
            let reason = reason.isEmpty ? "no reason given" : Sanitizer.display(reason)
            switch kind {
            case VIGIL_HELPER_EVENT_INTERRUPTED: context.reporter.report(.interrupted(reason: reason))
            case VIGIL_HELPER_EVENT_RESUMED: context.reporter.report(.resumed)
            case VIGIL_HELPER_EVENT_RESUME_FAILED: context.reporter.report(.resumeFailed(reason: reason))
            case VIGIL_HELPER_EVENT_DETAILS_CHANGED: context.reporter.report(.detailsChanged)
            default: context.logger.warning("its helper reported an unknown event \(kind); ignored")
            }
        case .log(let level, let text):
            let level: Logger.Level =
                switch level {
                case VIGIL_LOG_DEBUG: .debug
                case VIGIL_LOG_INFO: .info
                case VIGIL_LOG_WARNING: .warning
                default: .error
                }
            context.logger.log(level: level, "\(Sanitizer.display(text))")
        case .denial(let line):
            guard let denial = ConfinementDenial(reportLine: Substring(line)) else {
                context.logger.warning("its helper sent a malformed confinement report: \(Sanitizer.display(line))")
                return
            }
            denials += 1
            lastDenial = denial
            context.logger.warning(
                "confinement denied: \(Sanitizer.display(describe(denial)))",
                metadata: [
                    "confinement.operation": "\(denial.operation)",
                    "confinement.capability":
                        "\(Sanitizer.display(denial.declaration(stateDirectory: context.stateDirectory)))",
                ])
            context.reporter.report(.denied(denial))
        }
    }

    // MARK: Replies as errors

    /// Turns a failed reply into the refusal it stands for (the same words as when plugins were mapped in the host).
    private func check(_ reply: Reply, library: VerifiedLibrarySet.Library) throws(SharedLibraryError) {
        guard !reply.code.isEmpty else { return }
        let symbol = ELFImage.entrySymbol
        let path = set.main.path
        let interface = VIGIL_KEEPALIVE_INTERFACE_V1
        let detail = Sanitizer.display(reply.detail)
        guard let code = SharedLibraryErrorCode(rawValue: reply.code) else {
            throw fail(
                .helperProtocol,
                "its helper process answered with the unknown code \"\(Sanitizer.display(reply.code))\" — the helper "
                    + "and the host must come from the same Vigil release; reinstall Vigil")
        }
        let message: String
        switch (code, reply.variant) {
        case (.loadFailed, _):
            message =
                "the dynamic linker refused its verified library \(library.path): \(detail) — a symbol it needs may be "
                + "missing from the libraries it lists; ask the publisher for a build for this system"
        case (.staleHandle, _):
            message =
                "after mapping \(library.path) its SONAME \(library.soname) resolves to another object — give each "
                + "plugin's libraries unique SONAMEs"
        case (.missingDescriptor, "changed"):
            message =
                "the \(symbol) of \(path) changed between its file bytes and its mapping (a constructor wrote to it?) "
                + "— the descriptor must be const"
        case (.missingDescriptor, "empty"):
            message = "the \(symbol) of \(path) leaves init, deinit or get_interface empty — all three are required"
        case (.missingDescriptor, _):
            message =
                "\(path) mapped, but its \(symbol) does not resolve inside it — export the descriptor from the "
                + "plugin's own library"
        case (.initFailed, _):
            message =
                "its init returned false (see the plugin's log lines above) — check its settings and requirements, or "
                + "report it to the plugin's publisher"
        case (.pluginIDMismatch, _):
            let found = reply.variant == "none" ? "(none)" : detail
            message =
                "its library says it is plugin \"\(found)\", but the signed manifest is for \"\(set.plugin)\" — the "
                + "publisher must set plugin_id to the manifest's name"
        case (.interfaceMissing, "absent"):
            message =
                "it does not offer the keep-alive interface \"\(interface)\" — it may be built for another kind of "
                + "plugin host"
        case (.interfaceMissing, _):
            message =
                "its \"\(interface)\" table is \(detail) bytes or leaves a function empty; version 1 needs all of "
                + "create, start, stop, details and destroy"
        case (.createFailed, _): message = "it could not be created: \(Self.reason(detail))"
        case (.startFailed, _): message = "it failed to start: \(Self.reason(detail))"
        case (.confinementFailed, _):
            message =
                "its helper process could not confine itself before mapping the plugin: \(detail) — the plugin did "
                + "not run; see `vigil status` for what this kernel can enforce"
        default: message = detail
        }
        throw fail(code, message)
    }

    private static func reason(_ text: String) -> String {
        text.isEmpty ? "the plugin gave no reason" : text
    }
}

extension HelperRecord {
    /// This record with `raw` appended as a string field.
    func with(_ raw: [UInt8]) -> HelperRecord {
        var copy = self
        copy.put(raw)
        return copy
    }

    /// This record with `text` appended as a string field.
    func with(_ text: String) -> HelperRecord { with(Array(text.utf8)) }
}
