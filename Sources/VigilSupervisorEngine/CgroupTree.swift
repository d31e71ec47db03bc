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
/// 5.14, an unprivileged user without delegation), ``make(workers:logger:)`` returns no tree and
/// the supervisor falls back to process groups and `PR_SET_PDEATHSIG`. Where the tree could be
/// made but its sentinel cannot start (no descriptor left, fork refused), it is removed again and
/// the fallback is the same, with a warning: a tree that nobody kills when the host dies would
/// promise what it cannot keep.
///
/// The tree holds no descriptor per worker: a worker's cgroup directory (for clone3) and its
/// `cgroup.procs` (for the fork fallback) are opened for the start and closed right after.
final class CgroupTree {
    let path: String
    private let workerPaths: [String]
    /// Cgroups made after the tree for workers a reload added beyond its first ones (by worker
    /// index). Not in the sentinel's removal list: ``close()`` empties and removes them first.
    private var addedPaths: [Int: String] = [:]
    private var sentinelPID: pid_t = -1
    /// The sentinel's end of its pipe: closing it tells the sentinel to end the tree.
    private var sentinelPipe: OwnedDescriptor?
    /// The directories the sentinel removes; it reads them from its copy of this memory, so the
    /// list lives as long as the tree.
    private let removals: RemovalList

    private init(path: String, workerPaths: [String], removals: consuming RemovalList) {
        self.path = path
        self.workerPaths = workerPaths
        self.removals = removals
    }

    private static let counter = Mutex(0)

    /// What ``make(workers:logger:)`` found.
    enum Setup {
        /// The tree, with its sentinel running.
        case tree(CgroupTree)
        /// This host may not use cgroups (an expected limit, logged at debug level).
        case unavailable(String)
        /// The tree could be made but not guarded (a fault worth a warning): it was removed.
        case failed(String)
    }

    /// Creates the tree for `workers` workers and starts its sentinel.
    static func make(workers: Int, logger: Logger) -> Setup {
        guard let mount = cgroup2Mount() else { return .unavailable("no cgroup v2 file system is mounted") }
        guard let own = ownCgroup() else { return .unavailable("/proc/self/cgroup has no cgroup v2 entry") }
        let parent = own == "/" ? mount : mount + own
        let n = counter.withLock { value -> Int in
            value += 1
            return value
        }
        let path = "\(parent)/vigil-supervisor.\(getpid()).\(n)"
        do throws(SystemCallError) {
            try SystemCallError.check("mkdir") { mkdir(path, 0o755) }
        } catch {
            return .unavailable("cannot create \(path): \(error.reason)")
        }
        var workerPaths: [String] = []
        func undo() {
            workerPaths.reversed().forEach { _ = rmdir($0) }
            rmdir(path)
        }
        for index in 0..<workers {
            let worker = "\(path)/w\(index)"
            do throws(SystemCallError) {
                try SystemCallError.check("mkdir") { mkdir(worker, 0o755) }
            } catch {
                undo()
                return .unavailable("cannot create \(worker): \(error.reason)")
            }
            workerPaths.append(worker)
        }
        guard access(workerPaths.first.map { $0 + "/cgroup.procs" } ?? path + "/cgroup.procs", W_OK) == 0,
            access(path + "/cgroup.kill", W_OK) == 0
        else {
            undo()
            return .unavailable("\(path) has no writable cgroup.procs or cgroup.kill (Linux < 5.14?)")
        }
        let removals = RemovalList(workerPaths + [path])
        let treeKill: OwnedDescriptor
        do throws(SystemCallError) {
            treeKill = try OwnedDescriptor("open") { open(path + "/cgroup.kill", O_WRONLY | O_CLOEXEC) }
        } catch {
            undo()
            return .failed("cannot open \(path)/cgroup.kill for the sentinel: \(error.reason)")
        }
        var pid: pid_t = -1
        var pipe: Int32 = -1
        let rc = vigil_sentinel_start(treeKill.rawValue, removals.pointer, &pid, &pipe)
        try? treeKill.close()  // the sentinel has its own copy
        guard rc == 0 else {
            undo()
            return .failed(
                "cannot start the sentinel process: \(SystemCallError("vigil_sentinel_start", errno: rc).reason)")
        }
        let tree = CgroupTree(path: path, workerPaths: workerPaths, removals: removals)
        tree.sentinelPID = pid
        tree.sentinelPipe = OwnedDescriptor(adopting: pipe)
        return .tree(tree)
    }

    /// Runs `body` with worker `index`'s cgroup directory (for clone3's CLONE_INTO_CGROUP) and
    /// its `cgroup.procs` (for the fork fallback: the child writes "0" there), open for the call
    /// only. Returns the reason instead when the directory cannot be opened, and whether that is
    /// the cgroup's fault (true) or the process's (out of descriptors: false).
    func withDescriptors<R>(
        worker index: Int, _ body: (_ directory: Int32, _ procs: Int32) -> R
    ) -> Result<R, CgroupOpenFailure> {
        guard let path = directory(worker: index) else {
            return .failure(CgroupOpenFailure(reason: "it has no cgroup", cgroupFault: true))
        }
        let directory: OwnedDescriptor
        let procs: OwnedDescriptor
        do throws(SystemCallError) {
            directory = try OwnedDescriptor("open") { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        } catch {
            return .failure(CgroupOpenFailure("cannot open \(path)", error))
        }
        do throws(SystemCallError) {
            procs = try OwnedDescriptor("open") { open(path + "/cgroup.procs", O_WRONLY | O_CLOEXEC) }
        } catch {
            return .failure(CgroupOpenFailure("cannot open \(path)/cgroup.procs", error))
        }
        return .success(body(directory.rawValue, procs.rawValue))
    }

    /// Worker `index`'s cgroup directory, if it has one.
    private func directory(worker index: Int) -> String? {
        workerPaths.indices.contains(index) ? workerPaths[index] : addedPaths[index]
    }

    /// Makes the cgroup of worker `index`, a worker a reload added beyond the tree's first ones;
    /// returns why it could not (the worker then runs without one, as ``withDescriptors`` says).
    func addWorker(_ index: Int) -> String? {
        guard directory(worker: index) == nil else { return nil }
        let worker = "\(path)/w\(index)"
        do throws(SystemCallError) {
            try SystemCallError.check("mkdir") { mkdir(worker, 0o755) }
        } catch  where error.number != EEXIST {
            return "cannot create \(worker): \(error.reason)"
        } catch {}
        addedPaths[index] = worker
        return nil
    }

    /// Kills every process left in worker `index`'s cgroup: SIGKILL to each pid in its
    /// `cgroup.procs`, again for any that forked meanwhile. (Not `cgroup.kill`: on the kernels
    /// tried, a process later created in a killed cgroup with CLONE_INTO_CGROUP is killed too,
    /// which would take the worker's replacement; the sentinel uses `cgroup.kill` at the end.)
    func kill(worker index: Int) {
        guard let path = directory(worker: index) else { return }
        for _ in 0..<8 {
            let pids =
                Self.readAll(path + "/cgroup.procs").map {
                    $0.split(separator: "\n").compactMap { Int32($0) }
                } ?? []
            if pids.isEmpty { return }
            for pid in pids where pid > 0 { _ = Glibc.kill(pid, SIGKILL) }
        }
    }

    /// Ends the tree: the sentinel kills whatever is left in it, removes the directories and
    /// exits; this waits for it (it is this process's child).
    func close() {
        // The sentinel removes only the directories it was given: the added ones go first,
        // emptied (their workers were reaped; what they left is killed here).
        for (index, worker) in addedPaths.sorted(by: { $0.key < $1.key }) {
            kill(worker: index)
            rmdir(worker)
        }
        addedPaths.removeAll()
        if let pipe = sentinelPipe.take() {
            try? pipe.close()
            var status: Int32 = 0
            while waitpid(sentinelPID, &status, 0) < 0 && errno == EINTR {}
        }
    }

    deinit {
        close()
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

/// Why a worker's cgroup could not be opened for its start.
struct CgroupOpenFailure: Error {
    var reason: String
    /// The cgroup's own fault (gone, refused), as opposed to the process having no descriptor left.
    var cgroupFault: Bool

    init(reason: String, cgroupFault: Bool) {
        self.reason = reason
        self.cgroupFault = cgroupFault
    }

    /// `what` failed with `error` (its errno read at the call).
    init(_ what: String, _ error: SystemCallError) {
        self.init(
            reason: "\(what): \(error.reason)",
            cgroupFault: error.number != EMFILE && error.number != ENFILE && error.number != ENOMEM)
    }
}

/// The sentinel's list of directories to remove: NUL-separated paths (children first), ending
/// with an empty string, in memory the sentinel reads after the fork. Its one owner frees it
/// once, when the owner goes.
struct RemovalList: ~Copyable {
    let pointer: UnsafeMutablePointer<CChar>

    init(_ paths: [String]) {
        var bytes: [UInt8] = []
        for path in paths { bytes += Array(path.utf8) + [0] }
        bytes.append(0)
        pointer = .allocate(capacity: bytes.count)
        for (i, byte) in bytes.enumerated() { pointer[i] = CChar(bitPattern: byte) }
    }

    deinit { pointer.deallocate() }
}
