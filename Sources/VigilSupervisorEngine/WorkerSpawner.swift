internal import CVigilSpawn
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Starts one worker process: the environment (scrubbed of what systemd meant for the supervisor,
/// plus the worker's own variables and its `NOTIFY_SOCKET`), the program found on `PATH`, and
/// the fork/exec in `CVigilSpawn`. Call it from the thread the worker's `PR_SET_PDEATHSIG`
/// should follow.
struct WorkerSpawner {
    /// The environment every worker starts from.
    let baseEnvironment: [String: String]

    /// A started process.
    struct Started {
        var pid: Int32
        var pidfd: Int32
        var path: String
    }

    /// Variables systemd (or a parent supervisor) set for the supervisor itself.
    static let scrubbed = [
        "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
    ]

    /// Starts `spec` with `notifyPath` as its `NOTIFY_SOCKET`, in the cgroup behind
    /// `cgroupDirectoryFD` / `cgroupProcsFD` (-1: none); returns the reason on failure. The
    /// child gets the soft descriptor limit the process started with back
    /// (``DescriptorLimit/originalSoftLimit``).
    func spawn(
        _ spec: WorkerSpec, notifyPath: String, cgroupDirectoryFD: Int32 = -1, cgroupProcsFD: Int32 = -1
    ) -> Result<Started, SpawnFailure> {
        let environment = environment(for: spec, notifyPath: notifyPath)
        let path: String
        switch Self.resolve(spec.command, path: environment["PATH"], workingDirectory: spec.workingDirectory) {
        case .success(let found): path = found
        case .failure(let failure): return .failure(failure)
        }
        let watchdogUsec = spec.watchdogSeconds.map { UInt64(($0 * 1_000_000).rounded()) }
        var envStrings = environment.map { "\($0.key)=\($0.value)" }.sorted()
        if let usec = watchdogUsec { envStrings.append("WATCHDOG_USEC=\(usec)") }

        var allocations: [UnsafeMutablePointer<CChar>] = []
        func dup(_ s: String) -> UnsafeMutablePointer<CChar> {
            let p = strdup(s)!
            allocations.append(p)
            return p
        }
        defer { allocations.forEach { free($0) } }

        let argv: [UnsafeMutablePointer<CChar>?] = [dup(spec.command)] + spec.arguments.map(dup) + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = envStrings.map(dup)
        var pidSlot: UnsafeMutablePointer<CChar>?
        if watchdogUsec != nil {
            let slot = UnsafeMutablePointer<CChar>.allocate(capacity: Int(VIGIL_PID_ENV_SIZE))
            slot.initialize(repeating: 0, count: Int(VIGIL_PID_ENV_SIZE))
            _ = "WATCHDOG_PID=0".withCString { strcpy(slot, $0) }
            pidSlot = slot
            envp.append(slot)
        }
        defer { pidSlot?.deallocate() }
        envp.append(nil)
        let pathC = dup(path)
        let cwdC = spec.workingDirectory.map(dup)
        let oomC = spec.oomScoreAdjust.map { dup(String($0)) }

        var result = vigil_spawn_result()
        let rc = argv.withUnsafeBufferPointer { argvBuf in
            envp.withUnsafeBufferPointer { envBuf in
                var request = vigil_spawn_request(
                    path: pathC, argv: argvBuf.baseAddress, envp: envBuf.baseAddress,
                    working_directory: cwdC, oom_score_adj: oomC, watchdog_pid_env: pidSlot,
                    cgroup_dir_fd: cgroupDirectoryFD, cgroup_procs_fd: cgroupProcsFD,
                    nofile_soft: UInt(DescriptorLimit.originalSoftLimit ?? 0))
                return vigil_spawn(&request, &result)
            }
        }
        guard rc == 0 else {
            return .failure(Self.failure(stage: result.failed_stage, error: result.error, spec: spec, path: path))
        }
        return .success(Started(pid: result.pid, pidfd: result.pidfd, path: path))
    }

    /// The environment `spec` runs with.
    func environment(for spec: WorkerSpec, notifyPath: String) -> [String: String] {
        var env = baseEnvironment
        for key in Self.scrubbed { env[key] = nil }
        env.merge(spec.environment) { _, new in new }
        env["NOTIFY_SOCKET"] = notifyPath
        return env
    }

    /// The program to execute, by ``ExecutableLookup``'s rule (the one `vigil check` checks by):
    /// a path (relative to the worker's `working_directory`), or a bare name's first program in
    /// `path` (the worker's `PATH`). A directory is named as one (exec would only say
    /// "Permission denied"); what is no program is refused here, with the words exec would use.
    static func resolve(
        _ command: String, path: String?, workingDirectory: String?
    ) -> Result<String, SpawnFailure> {
        switch ExecutableLookup.resolve(command, searchPath: path, relativeTo: workingDirectory) {
        case .success(let program): return .success(program)
        case .failure(.directory(let path)):
            return .failure(
                SpawnFailure("\(path) is a directory, not a program — set `command` to the executable inside it"))
        case .failure(.missing(let path)):
            return .failure(Self.cannotExecute(path, ENOENT))
        case .failure(.notRegularFile(let path)), .failure(.notExecutable(let path)):
            return .failure(Self.cannotExecute(path, EACCES))
        case .failure(.relativeWithoutDirectory):
            return .failure(
                SpawnFailure(
                    "\(command) is a relative path and the worker has no working_directory — give the absolute "
                        + "path, or set working_directory (a relative command is resolved against it)"))
        case .failure(.notFound):
            return .failure(
                SpawnFailure(
                    "program \"\(command)\" was not found in PATH or is not executable — use an absolute path or fix PATH"
                ))
        }
    }

    private static func cannotExecute(_ path: String, _ error: Int32) -> SpawnFailure {
        SpawnFailure(
            "cannot execute \(path): \(SystemCallError("execve", errno: error).reason) — check the `command` setting")
    }

    private static func failure(stage: Int32, error: Int32, spec: WorkerSpec, path: String) -> SpawnFailure {
        let what = SystemCallError("vigil_spawn", errno: error).reason
        switch Int(stage) {
        case Int(VIGIL_STAGE_EXEC):
            return cannotExecute(path, error)
        case Int(VIGIL_STAGE_CHDIR):
            return SpawnFailure("cannot change into working_directory \(spec.workingDirectory ?? ""): \(what)")
        case Int(VIGIL_STAGE_OOM_SCORE_ADJ):
            return SpawnFailure(
                "cannot set oom_score_adj to \(spec.oomScoreAdjust ?? 0): \(what) — lowering it below "
                    + "the current value needs CAP_SYS_RESOURCE")
        case Int(VIGIL_STAGE_CLONE), Int(VIGIL_STAGE_PIPE):
            let remedy =
                error == EMFILE || error == ENFILE
                ? " — the host is out of descriptors: raise its descriptor limit (LimitNOFILE= in its unit, "
                    + "ulimit -Hn in its shell) or run fewer workers" : ""
            return SpawnFailure("cannot fork: \(what)\(remedy)")
        case Int(VIGIL_STAGE_CGROUP): return SpawnFailure(cgroupStage: true, "cannot enter its cgroup: \(what)")
        default: return SpawnFailure("spawn failed at stage \(stage): \(what)")
        }
    }
}

/// Why a worker could not be started.
struct SpawnFailure: Error, Sendable, Hashable {
    var reason: String
    /// The child could not move into its cgroup (the caller may retry without one).
    var cgroupStage = false
    init(cgroupStage: Bool = false, _ reason: String) {
        self.reason = reason
        self.cgroupStage = cgroupStage
    }
}
