internal import CVigilFuzz
import Foundation
import VigilFuzzTargets

/// `vigil-fuzz TARGET ARGS…`.
///
/// Linked with the fuzzer runtime (scripts/fuzz.sh builds it with `-sanitize=fuzzer,address`),
/// it hands ARGS to libFuzzer, which feeds generated inputs to the target. Without it (an ordinary
/// `swift build`), ARGS are files or directories whose inputs go through the target once each:
/// reproducing a finding under a debugger, or replaying a corpus.
@main
enum FuzzMain {
    /// The target libFuzzer's callback runs; set once, before libFuzzer starts.
    nonisolated(unsafe) static var target = FuzzTarget.manifest

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        guard let first = arguments.first, let target = FuzzTarget(rawValue: first) else {
            complain("usage: vigil-fuzz TARGET [FILE|DIRECTORY|-FLAG=VALUE…]\ntargets: \(names)")
            exit(64)
        }
        Self.target = target
        // libFuzzer keeps argv for the whole run: C strings that are never freed.
        var argc = CInt(arguments.count)
        let strings = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: arguments.count + 1)
        for (i, argument) in ([CommandLine.arguments[0]] + arguments.dropFirst()).enumerated() {
            strings[i] = strdup(argument)
        }
        strings[arguments.count] = nil
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = strings
        let status = vigil_fuzz_run(&argc, &argv) { data, size in
            FuzzMain.target.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
            return 0
        }
        if status >= 0 { exit(status) }
        replay(target, paths: Array(arguments.dropFirst()))
    }

    static func replay(_ target: FuzzTarget, paths: [String]) {
        guard !paths.isEmpty, !paths.contains(where: { $0.hasPrefix("-") }) else {
            complain("built without the fuzzer runtime: give input files or directories (scripts/fuzz.sh fuzzes)")
            exit(64)
        }
        do {
            let files = try FuzzTarget.inputs(paths)
            for file in files {
                guard let bytes = FileManager.default.contents(atPath: file) else {
                    complain("cannot read \(file)")
                    exit(1)
                }
                target.run(Array(bytes))
            }
            print("vigil-fuzz \(target.rawValue): \(files.count) inputs, no crash")
        } catch {
            complain("\(error)")
            exit(1)
        }
    }

    static func complain(_ message: String) {
        FileHandle.standardError.write(Data("vigil-fuzz: \(message)\n".utf8))
    }
}
