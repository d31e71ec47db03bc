internal import CVigilSpawn
import FoundationEssentials
import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// No orphans at any depth, where the kernel allows it: a cgroup v2 directory per supervisor
/// (`vigil-supervisor.PID.N`, under the host's own cgroup) with one child cgroup per worker.
/// Each worker moves itself into its cgroup before exec, so every process it starts — double
/// forked, `setsid`, in any process group — stays in it. It is created in it (clone3
/// `CLONE_INTO_CGROUP`): writing `cgroup.procs` would cost milliseconds per start (a migration
/// waits for an RCU grace period), so that is only the fallback where clone3 is missing. A worker's cgroup is killed
/// (`cgroup.kill`) when its main process exits or is killed; and a sentinel process outside the
/// tree kills the whole tree when the supervisor stops or dies, even by SIGKILL.
///
/// Where the host may not create a cgroup (no writable cgroup v2, no `cgroup.kill` before Linux
/// 5.14, an unprivileged user without delegation), ``make(workers:logger:)`` returns nil and the
/// supervisor falls back to process groups and `PR_SET_PDEATHSIG`.
final class CgroupTree {
    let path: String
    private let workerPaths: [String]
    private var procsFDs: [Int32]
    private var killFDs: [Int32]
    private var directoryFDs: [Int32]
    private var sentinelPID: pid_t = -1
    private var sentinelPipe: Int32 = -1
    private let rmdirList: UnsafeMutablePointer<CChar>

    private init(path: String, workerPaths: [String], procsFDs: [Int32], killFDs: [Int32], directoryFDs: [Int32]) {
        self.path = path
        self.workerPaths = workerPaths
        self.procsFDs = procsFDs
        self.killFDs = killFDs
        self.directoryFDs = directoryFDs
        // Children first, then the tree itself; NUL-separated, ending with an empty string.
        var bytes: [UInt8] = []
        for directory in workerPaths + [path] { bytes += Array(directory.utf8) + [0] }
        bytes.append(0)
        rmdirList = .allocate(capacity: bytes.count)
        for (i, byte) in bytes.enumerated() { rmdirList[i] = CChar(bitPattern: byte) }
    }

    private static let counter = Mutex(0)

    /// Creates the tree for `workers` workers and starts its sentinel; nil (logged) where cgroups
    /// cannot be used.
    static func make(workers: Int, logger: Logger) -> CgroupTree? {
        func unavailable(_ why: String) -> CgroupTree? {
            logger.debug(
                "no cgroup for the workers; process groups and PR_SET_PDEATHSIG only", metadata: ["reason": "\(why)"])
            return nil
        }
        guard let mount = cgroup2Mount() else { return unavailable("no cgroup v2 file system is mounted") }
        guard let own = ownCgroup() else { return unavailable("/proc/self/cgroup has no cgroup v2 entry") }
        let parent = own == "/" ? mount : mount + own
        let n = counter.withLock { value -> Int in
            value += 1
            return value
        }
        let path = "\(parent)/vigil-supervisor.\(getpid()).\(n)"
        guard mkdir(path, 0o755) == 0 else {
            return unavailable("cannot create \(path): \(SystemCallError.current("mkdir").reason)")
        }
        var workerPaths: [String] = []
        var procs: [Int32] = []
        var kills: [Int32] = []
        var directories: [Int32] = []
        func undo(_ why: String) -> CgroupTree? {
            (procs + kills + directories).forEach { _ = Glibc.close($0) }
            workerPaths.reversed().forEach { _ = rmdir($0) }
            rmdir(path)
            return unavailable(why)
        }
        for index in 0..<workers {
            let worker = "\(path)/w\(index)"
            guard mkdir(worker, 0o755) == 0 else { return undo("cannot create \(worker)") }
            workerPaths.append(worker)
            let p = open(worker + "/cgroup.procs", O_WRONLY | O_CLOEXEC)
            let k = open(worker + "/cgroup.kill", O_WRONLY | O_CLOEXEC)
            let d = open(worker, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if p >= 0 { procs.append(p) }
            if k >= 0 { kills.append(k) }
            if d >= 0 { directories.append(d) }
            guard p >= 0, k >= 0, d >= 0 else {
                return undo("\(worker) has no cgroup.procs or cgroup.kill (Linux < 5.14?)")
            }
        }
        let treeKill = open(path + "/cgroup.kill", O_WRONLY | O_CLOEXEC)
        guard treeKill >= 0 else { return undo("\(path)/cgroup.kill cannot be opened") }
        let tree = CgroupTree(
            path: path, workerPaths: workerPaths, procsFDs: procs, killFDs: kills, directoryFDs: directories)
        var pid: pid_t = -1
        var pipe: Int32 = -1
        let rc = vigil_sentinel_start(treeKill, tree.rmdirList, &pid, &pipe)
        _ = Glibc.close(treeKill)
        guard rc == 0 else {
            tree.procsFDs = []
            tree.killFDs = []
            tree.directoryFDs = []
            tree.rmdirList.deallocate()
            return undo("cannot start the sentinel: \(SystemCallError("vigil_sentinel_start", errno: rc).reason)")
        }
        tree.sentinelPID = pid
        tree.sentinelPipe = pipe
        return tree
    }

    /// The descriptor a worker writes "0" to, to move itself into its cgroup (without clone3).
    func procsFD(worker index: Int) -> Int32 { procsFDs.indices.contains(index) ? procsFDs[index] : -1 }

    /// The worker's cgroup directory, for clone3's CLONE_INTO_CGROUP.
    func directoryFD(worker index: Int) -> Int32 {
        directoryFDs.indices.contains(index) ? directoryFDs[index] : -1
    }

    /// Kills every process left in worker `index`'s cgroup: SIGKILL to each pid in its
    /// `cgroup.procs`, again for any that forked meanwhile. (Not `cgroup.kill`: on the kernels
    /// tried, a process later created in a killed cgroup with CLONE_INTO_CGROUP is killed too,
    /// which would take the worker's replacement; the sentinel uses `cgroup.kill` at the end.)
    func kill(worker index: Int) {
        guard workerPaths.indices.contains(index) else { return }
        for _ in 0..<8 {
            let pids =
                Self.readAll(workerPaths[index] + "/cgroup.procs").map {
                    $0.split(separator: "\n").compactMap { Int32($0) }
                } ?? []
            if pids.isEmpty { return }
            for pid in pids where pid > 0 { _ = Glibc.kill(pid, SIGKILL) }
        }
    }

    /// Ends the tree: the sentinel kills whatever is left in it, removes the directories and
    /// exits; this waits for it (it is this process's child).
    func close() {
        (procsFDs + killFDs + directoryFDs).forEach { _ = Glibc.close($0) }
        procsFDs = []
        killFDs = []
        directoryFDs = []
        if sentinelPipe >= 0 {
            _ = Glibc.close(sentinelPipe)
            sentinelPipe = -1
            var status: Int32 = 0
            while waitpid(sentinelPID, &status, 0) < 0 && errno == EINTR {}
        }
    }

    deinit {
        close()
        rmdirList.deallocate()
    }

    /// The mount point of the first cgroup v2 file system, from /proc/self/mountinfo.
    private static func cgroup2Mount() -> String? {
        guard let text = readAll("/proc/self/mountinfo") else { return nil }
        for line in text.split(separator: "\n") {
            let halves = line.split(separator: " - ", omittingEmptySubsequences: false)
            guard halves.count == 2, halves[1].hasPrefix("cgroup2 ") else { continue }
            let fields = halves[0].split(separator: " ")
            if fields.count >= 5 { return String(fields[4]) }
        }
        return nil
    }

    /// This process's cgroup v2 path (the `0::` line of /proc/self/cgroup).
    private static func ownCgroup() -> String? {
        guard let text = readAll("/proc/self/cgroup") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3))
        }
        return nil
    }

    private static func readAll(_ path: String) -> String? {
        FileIO.contents(ofFile: path, limit: 1 << 20).map { String(decoding: $0, as: UTF8.self) }
    }
}
