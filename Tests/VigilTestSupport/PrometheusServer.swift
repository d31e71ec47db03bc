import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real Prometheus (Debian's `prometheus`) on loopback, started by the test, scraping its
/// targets every second, and asked with its HTTP query API (``query(_:)``). Also the loopback
/// helpers its tests share: a free port, a GET through curl, a sample of an exposition.
public final class PrometheusServer: Sendable {
    /// Where Prometheus answers (`http://127.0.0.1:PORT`).
    public let port: Int
    private let process: ChildProcess
    private let log: String

    /// Starts Prometheus with one scrape job per `targets` entry (job name: `HOST:PORT`), its
    /// storage and log in `directory`.
    public init(targets: [String: String], in directory: TestDirectory) throws {
        port = try Self.freePort()
        log = directory.url("prometheus.log")
        let jobs = targets.sorted { $0.key < $1.key }.map { job, target in
            "  - job_name: \(job)\n    static_configs: [{targets: [\"\(target)\"]}]\n"
        }
        let config = try directory.write(
            "prometheus.yml",
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + jobs.joined())
        process = try ChildProcess(
            "/usr/bin/prometheus",
            [
                "--config.file=\(config)", "--storage.tsdb.path=\(directory.url("tsdb"))",
                "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
            ], stdout: log, stderr: log)
    }

    deinit { _ = process.terminate(grace: 5) }

    /// What Prometheus logged (for a failure's message).
    public var output: String { (try? TextFile.read(log)) ?? "" }

    /// The values of an instant query, by the series' `job` label (empty when Prometheus does
    /// not answer yet, or nothing matches).
    public func query(_ expression: String) async throws -> [String: Double] {
        let answer = try await Self.get("http://127.0.0.1:\(port)/api/v1/query", query: expression)
        guard answer.status == 200,
            let document = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
            let data = document["data"] as? [String: Any], let results = data["result"] as? [[String: Any]]
        else { return [:] }
        var values: [String: Double] = [:]
        for result in results {
            guard let labels = result["metric"] as? [String: String], let job = labels["job"],
                let value = result["value"] as? [Any], value.count == 2, let text = value[1] as? String
            else { continue }
            values[job] = Double(text)
        }
        return values
    }

    /// ``query(_:)`` until it returns `expected`, polled for at most `timeout` seconds; the last answer.
    public func waitForQuery(_ expression: String, toBe expected: [String: Double], timeout: Double = 30)
        async throws -> [String: Double]
    {
        let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
        while true {
            let values = try await query(expression)
            if values == expected || ContinuousClock.now >= deadline { return values }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// A free TCP port on 127.0.0.1 (bound to port 0, then released).
    public static func freePort() throws -> Int {
        let (descriptor, port) = try loopbackSocket(listening: false)
        close(descriptor)
        return port
    }

    /// `count` different free TCP ports on 127.0.0.1.
    public static func freePorts(_ count: Int) throws -> [Int] {
        var ports: [Int] = []
        while ports.count < count {
            let port = try freePort()
            if !ports.contains(port) { ports.append(port) }
        }
        return ports
    }

    /// A TCP socket bound to a free port of 127.0.0.1 (listening when `listening`): the caller
    /// closes the descriptor.
    public static func loopbackSocket(listening: Bool) throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && (!listening || listen(fd, 1) == 0) && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            let error = errno
            close(fd)
            throw RuntimeFixtures.Failure("no free port: errno \(error)")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// GET `url` with curl: the status and the body (status 0 when nothing answered).
    public static func get(_ url: String, unixSocket: String? = nil, query: String? = nil) async throws -> (
        status: Int, body: String
    ) {
        var arguments = ["-sS", "--max-time", "5", "-w", "\n%{http_code}"]
        if let unixSocket { arguments += ["--unix-socket", unixSocket] }
        if let query { arguments += ["-G", "--data-urlencode", "query=" + query] }
        let result = try await RuntimeFixtures.run("/usr/bin/curl", arguments + [url], timeout: 10)
        guard result.status == 0, let newline = result.stdout.lastIndex(of: "\n") else { return (0, result.stderr) }
        return (Int(result.stdout[result.stdout.index(after: newline)...]) ?? 0, String(result.stdout[..<newline]))
    }

    /// One sample's value in an exposition (`name{labels}` exactly as rendered).
    public static func sample(_ series: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }
}
