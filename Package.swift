// swift-tools-version:6.1
import PackageDescription

// Every Swift target is built in Swift 6 language mode with these upcoming features on.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let log = Target.Dependency.product(name: "Logging", package: "swift-log")
let lifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let coreMetrics = Target.Dependency.product(name: "CoreMetrics", package: "swift-metrics")

let package = Package(
    name: "vigil",
    products: [
        // The library a host app links (every built-in plugin), and the contract plugins implement.
        .library(name: "Vigil", targets: ["Vigil"]),
        // The host core alone (VigilHost, its state machine, config, trust and status), for a host that
        // registers only the plugins it runs: no audio, speech, sound-file or D-Bus module.
        .library(name: "VigilHostCore", targets: ["VigilHostCore"]),
        .library(name: "VigilPlugin", targets: ["VigilPlugin"]),
        // One product per first-party plugin, for a host that registers only what it runs.
        .library(name: "VigilSupervisor", targets: ["VigilSupervisor"]),
        .library(name: "VigilSupervisorDesktop", targets: ["VigilSupervisorDesktop"]),
        .library(name: "VigilSilentEngine", targets: ["VigilSilentEngine"]),
        .library(name: "VigilSoundscape", targets: ["VigilSoundscape"]),
        .library(name: "VigilExecutor", targets: ["VigilExecutor"]),
        // `[metrics]` for a library host: the Prometheus registry, textfile and HTTP endpoints.
        .library(name: "VigilMetricsExport", targets: ["VigilMetricsExport"]),
        // journald-native logs for a host app: the handler `vigil` uses, and "is standard error the journal?".
        .library(name: "VigilJournal", targets: ["VigilJournal"]),
        // The core (configuration, manifests, trust), signatures, the playback layer and the announcer,
        // for the benchmark hosts of the nested Benchmarks/ package (and hosts that use them directly).
        .library(name: "VigilCore", targets: ["VigilCore"]),
        .library(name: "VigilCrypto", targets: ["VigilCrypto"]),
        .library(name: "VigilAudio", targets: ["VigilAudio"]),
        .library(name: "VigilAnnounce", targets: ["VigilAnnounce"]),
        // The fuzz harnesses, for the libFuzzer driver of the nested Fuzz/ package (not for hosts).
        .library(name: "VigilFuzzTargets", targets: ["VigilFuzzTargets"]),
        .executable(name: "vigil", targets: ["vigil"]),
        // The process each shared-library plugin runs in; installed beside `vigil` or in /usr/libexec/vigil/.
        .executable(name: "vigil-plugin-helper", targets: ["vigil-plugin-helper"]),
        .plugin(name: "VigilBuildCheck", targets: ["VigilBuildCheck"]),
        .plugin(name: "VigilTrustCommand", targets: ["VigilTrustCommand"]),
        .plugin(name: "VigilCheckCommand", targets: ["VigilCheckCommand"]),
        // For authors of shared-library plugins written in Swift (docs/native-plugins.md).
        .library(name: "VigilPluginSDK", targets: ["VigilPluginSDK"]),
        // The example third-party plugin, as the shared library its signed manifest names.
        .library(name: "VigilHeartbeatExample", type: .dynamic, targets: ["VigilHeartbeatExample"]),
        // The tool Vigil's SwiftPM plugins run (`vigil check`, `vigil plugin trust`): the build check's
        // copy, which the command plugins reuse (or build as a product): see VigilPluginSupport.builtTool.
        .executable(name: "vigil-plugin-tool", targets: ["vigil-plugin-tool"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // `TestClock` for the tests that run the supervisor's deadlines in virtual time.
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
        // Metrics (issue 30): the swift-metrics API the host and plugins record through, and the
        // Prometheus registry only the exporter (VigilMetricsExport) links.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // MARK: - C libraries
        // Each reached through exactly one Swift wrapper module (`internal import`).
        .systemLibrary(
            name: "CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(
            name: "CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        // No `pkgConfig` here: libpulse.pc adds `-D_REENTRANT -pthread`, which SwiftPM refuses
        // with a warning on every build; the headers and library are in the default paths.
        .systemLibrary(
            name: "CPulse",
            providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(
            name: "CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CSndfile", pkgConfig: "sndfile",
            providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(
            name: "CEspeakNG", pkgConfig: "espeak-ng",
            providers: [.apt(["libespeak-ng-dev"])]),
        // seccomp filters, for CVigilConfine only.
        .systemLibrary(
            name: "CSeccomp", pkgConfig: "libseccomp",
            providers: [.apt(["libseccomp-dev"])]),
        // Our own C: prctl(PR_SET_NAME) (a variadic C call Swift cannot make) and the build
        // information `make` records (VigilVersion), for VigilBase.
        .target(name: "CVigilBase"),
        // fork/exec, pidfd, epoll and sd_notify socket calls for the supervisor (async-signal-safe child path).
        .target(name: "CVigilSpawn"),
        // Keeps espeak-ng from opening an audio device of its own (see its source).
        .target(name: "CVigilSpeechDevice"),
        // Descriptors 0–2 and SIGPIPE for the tools, set before the Swift runtime starts (linked
        // for its constructor).
        .target(name: "CVigilStartup"),
        // The shared-library plugin C ABI: vigil_plugin.h, the one header plugin authors build against.
        .target(name: "CVigilPluginABI"),
        // memfd_create, file seals and dladdr (need _GNU_SOURCE), imported by VigilLibraryCheck only
        // (LoaderCalls), through which VigilSharedLibrary maps plugins.
        .target(name: "CVigilLoader"),
        // The wire protocol between the host and vigil-plugin-helper, and the host's calls that start and
        // talk to it (posix_spawn, SOCK_SEQPACKET, SCM_RIGHTS, pidfd); imported by VigilSharedLibrary.
        .target(name: "CVigilHelper"),
        // The process a shared-library plugin runs in (docs/native-plugins.md): plain C; built with
        // --static-swift-stdlib (a release build) it carries no Swift runtime (see its main.c).
        .executableTarget(
            name: "vigil-plugin-helper", dependencies: ["CVigilHelper", "CVigilPluginABI", "CVigilConfine"],
            path: "Sources/VigilPluginHelper",
            cSettings: [.define("_FORTIFY_SOURCE", to: "2", .when(configuration: .release))],
            // The confinement's interposers (open, connect, execve, ...) must be what the plugin's
            // libraries bind to, so the helper exports its symbols.
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic"])]),
        // A shared-library plugin's confinement (Landlock, seccomp, no_new_privs), applied by the helper
        // process to itself before it maps the plugin; the policy's wire encoding and the denial reports.
        // Imported by VigilConfine (Swift) and the helper executable (C).
        .target(name: "CVigilConfine", dependencies: ["CSeccomp"]),

        // MARK: - Base
        // What every module shares: the error shape (codes, causes, locations, one rendering),
        // system-call causes with their errno, named threads of our own.
        .target(
            name: "VigilBase", dependencies: ["CVigilBase", .product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: strictSettings),
        // Ed25519, BLAKE2b, SHA-256 and minisign file formats over libsodium.
        .target(name: "VigilCrypto", dependencies: ["CSodium", "VigilBase"], swiftSettings: strictSettings),

        // MARK: - Core: the plugin contract, configuration, trust and the checks
        // The contract between the host and keep-alive plugin implementations.
        .target(
            name: "VigilPlugin", dependencies: ["VigilBase", log, lifecycle, coreMetrics], swiftSettings: strictSettings
        ),
        // The metrics Vigil records (MetricsCatalog: names, types, units, labels, help) and
        // `[metrics]` of vigil.toml; no exporter (that is VigilMetricsExport).
        .target(name: "VigilMetrics", dependencies: ["VigilPlugin", "VigilBase"], swiftSettings: strictSettings),
        // vigil.toml, signed manifests, trust, rollback protection, host requirements and checks.
        .target(
            name: "VigilCore",
            dependencies: [
                "VigilCrypto", "VigilPlugin", "VigilBase", .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: strictSettings),
        // What a supervisor runs (WorkerSpec, SupervisorConfiguration) and the one reader of its
        // `[supervisor]` settings, for the plugin and for the checks (which link no engine).
        .target(name: "VigilSupervisorSettings", dependencies: ["VigilPlugin"], swiftSettings: strictSettings),
        // The checks behind `vigil check`, the build check and `vigil up`, apart from everything that
        // runs plugins, so that the SwiftPM plugins' tool links only them (issue 13, point 4).
        // A shared-library plugin's checks on its verified bytes (ELF, SONAME, dependencies, ABI);
        // VigilSharedLibrary maps and runs what they accepted.
        .target(
            name: "VigilLibraryCheck",
            dependencies: ["CVigilPluginABI", "CVigilLoader", "VigilCore", "VigilCrypto", "VigilBase"],
            swiftSettings: strictSettings),
        // A plugin's capabilities as the kernel policy its helper applies (ConfinementPlan) and what this
        // kernel can enforce (ConfinementSupport); the denials the helper reports are VigilPlugin's ConfinementDenial.
        .target(
            name: "VigilConfine", dependencies: ["CVigilConfine", "VigilCore", "VigilBase"],
            swiftSettings: strictSettings),
        // What a vigil.toml amounts to (HostPlan) and its diagnostics (HostCheck), for Vigil and the tool.
        .target(
            name: "VigilHostCheck",
            dependencies: [
                "VigilCore", "VigilPlugin", "VigilLibraryCheck", "VigilSupervisorSettings", "VigilMetrics",
                "VigilConfine",
            ],
            swiftSettings: strictSettings),

        // MARK: - Plugins: the wrappers they run on, then the plugins
        // The playback layer shared by the audio plugins: ALSA PCMs, and PulseAudio's native
        // protocol for the sound server (`pulse`), where the ALSA plugin costs far more wakeups;
        // the playback keys of their settings (PlaybackSettings).
        .target(
            name: "VigilAudio", dependencies: ["CALSA", "CPulse", "VigilBase", log, "VigilPlugin"],
            swiftSettings: strictSettings),
        // D-Bus over sd-bus (libsystemd): connections on a thread of their own, calls, signals,
        // names and exported objects; and the journal's native logging (sd-journal,
        // JournalLogHandler). The only module that imports CSystemd.
        .target(name: "VigilDBus", dependencies: ["CSystemd", "VigilBase", log], swiftSettings: strictSettings),
        // The journal handler as a product of its own (its code is VigilDBus's, which wraps libsystemd).
        .target(name: "VigilJournal", dependencies: ["VigilDBus", log], swiftSettings: strictSettings),
        // Decoding sound files (WAV, FLAC, Ogg Vorbis, Opus, MP3) with libsndfile, streamed through
        // a bounded buffer. The only module that imports CSndfile.
        .target(name: "VigilSoundFile", dependencies: ["CSndfile", "VigilBase"], swiftSettings: strictSettings),
        // Text to speech: the one espeak-ng wrapper.
        .target(
            name: "VigilSpeech", dependencies: ["CEspeakNG", "CVigilSpeechDevice", "VigilAudio", "VigilBase"],
            swiftSettings: strictSettings),
        // The supervisor engine: workers, restarts, the notify protocol (like VigilAudio for audio).
        .target(
            name: "VigilSupervisorEngine", dependencies: ["CVigilSpawn", "VigilSupervisorSettings", "VigilBase", log],
            swiftSettings: strictSettings),
        // The supervisor plugin over it (its settings come through the engine's re-export): the
        // systemd channel; no D-Bus (the desktop notification is a notifier given to it).
        .target(
            name: "VigilSupervisor",
            dependencies: ["VigilSupervisorEngine", "VigilPlugin", log, coreMetrics, "VigilMetrics"],
            swiftSettings: strictSettings),
        // The supervisor's desktop notification over the session bus (freedesktop Notifications).
        .target(
            name: "VigilSupervisorDesktop", dependencies: ["VigilSupervisor", "VigilDBus", log],
            swiftSettings: strictSettings),
        .target(
            name: "VigilSilentEngine", dependencies: ["VigilAudio", "VigilPlugin", log, coreMetrics, "VigilMetrics"],
            swiftSettings: strictSettings),
        .target(
            name: "VigilSoundscape",
            dependencies: [
                "VigilAudio", "VigilPlugin", "VigilDBus", "VigilSoundFile", "VigilBase", log, coreMetrics,
                "VigilMetrics",
            ],
            swiftSettings: strictSettings),
        // Announcements: espeak-ng and sound files, and the announcer that ducks the other apps
        // around a prompt.
        .target(
            name: "VigilAnnounce",
            dependencies: [
                "VigilAudio", "VigilSpeech", "VigilSoundFile", "VigilDBus", "VigilPlugin", "VigilBase",
                log, coreMetrics, "VigilMetrics",
            ],
            swiftSettings: strictSettings),
        // Third-party plugins as shared libraries (docs/native-plugins.md). The loader: checks the
        // verified bytes (ELF, SONAME, dependencies, ABI) before mapping anything, maps them from
        // sealed memfds, drives the C ABI. The one module with C-ABI code.
        .target(
            name: "VigilSharedLibrary",
            dependencies: [
                "CVigilPluginABI", "CVigilHelper", "VigilCore", "VigilPlugin", "VigilBase", log, "VigilLibraryCheck",
                "VigilConfine",
            ],
            swiftSettings: strictSettings),

        // MARK: - Host
        // The host core: VigilHost (keepAlive()/stop(), status, events, Service), its state machine,
        // vigil.toml, trust and status plumbing, with an injected plugin registry; sleep handling and
        // the announcer are optional parts a host adds (Vigil adds them).
        .target(
            name: "VigilHostCore",
            dependencies: [
                "VigilCore", "VigilPlugin", "VigilSharedLibrary", "VigilBase", log, lifecycle, "VigilHostCheck",
                "VigilLibraryCheck", "VigilSupervisorEngine", coreMetrics, "VigilMetrics",
            ],
            swiftSettings: strictSettings),
        // The umbrella a host app links: the host core with every first-party plugin registered,
        // logind sleep handling and the announcer.
        .target(
            name: "Vigil",
            dependencies: [
                "VigilHostCore", "VigilCore", "VigilPlugin", "VigilSilentEngine", "VigilSupervisor",
                "VigilSupervisorDesktop", "VigilSoundscape", "VigilAnnounce", "VigilDBus", "VigilHostCheck", log,
            ],
            swiftSettings: strictSettings),
        // The Prometheus side of `[metrics]` (swift-prometheus, swift-nio): the registry as the
        // host's metrics factory, the textfile writer and /metrics, /healthz, /readyz. Linked by
        // the CLI, never by a plugin or the host library.
        .target(
            name: "VigilMetricsExport",
            dependencies: [
                "Vigil", "VigilMetrics", "VigilBase", log, lifecycle, coreMetrics,
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictSettings),
        // Opt-in for a whole process: Swift concurrency's global executor on one swift-nio event
        // loop thread instead of libdispatch's worker pool (and its once-a-second pool monitor).
        .target(
            name: "VigilExecutor", dependencies: [.product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: strictSettings),

        // MARK: - CLI and SwiftPM plugins
        // `vigil check` and `vigil plugin trust` with the CLI's output helpers: the `vigil` CLI's and the tool's.
        .target(
            name: "VigilCheckCommands",
            dependencies: [
                "VigilHostCheck", "VigilCore", "VigilCrypto", "VigilPlugin",
                .product(name: "ArgumentParser", package: "swift-argument-parser"), "VigilBase",
            ],
            swiftSettings: strictSettings),
        // The `vigil` command-line tool.
        .executableTarget(
            name: "vigil",
            dependencies: [
                "Vigil", "VigilCore", "VigilCrypto", "VigilPlugin", "VigilSoundscape", "VigilAnnounce",
                "VigilSharedLibrary", "VigilExecutor", "VigilSupervisorEngine", "CVigilStartup", "VigilBase", log,
                lifecycle, "VigilCheckCommands", "VigilLibraryCheck", "VigilJournal", "VigilMetrics",
                "VigilMetricsExport", "VigilRepository",
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/VigilCLI",
            swiftSettings: strictSettings),
        // The tool the SwiftPM plugins run (`vigil check`, `vigil plugin trust`), without the runtime.
        .executableTarget(
            name: "vigil-plugin-tool", dependencies: ["VigilCheckCommands", "VigilCore", "CVigilStartup"],
            path: "Sources/VigilPluginTool", swiftSettings: strictSettings),
        // SwiftPM plugins for host packages.
        .plugin(
            name: "VigilBuildCheck", capability: .buildTool(), dependencies: ["vigil-plugin-tool"]),
        .plugin(
            name: "VigilTrustCommand",
            capability: .command(
                intent: .custom(verb: "vigil-trust", description: "Review and trust a Vigil plugin's signing key."),
                permissions: [
                    .writeToPackageDirectory(reason: "Records the plugin's key under [trusted_plugins] in vigil.toml.")
                ])),
        // The command plugins name no tool dependency (SwiftPM would plan the whole build again for
        // each command): they run the build check's copy, see VigilPluginSupport.builtTool.
        .plugin(
            name: "VigilCheckCommand",
            capability: .command(
                intent: .custom(verb: "vigil-check", description: "Check vigil.toml and its plugins."))),

        // MARK: - Plugin authors' side and examples
        // The descriptor and keep-alive table in C (Swift cannot define a C data symbol), implemented
        // in Swift by VigilPluginSDK; the author writes a class and one @_cdecl.
        .target(name: "CVigilPluginSDK", dependencies: ["CVigilPluginABI"]),
        .target(
            name: "VigilPluginSDK", dependencies: ["CVigilPluginABI", "CVigilPluginSDK"], swiftSettings: strictSettings),
        .target(
            name: "VigilHeartbeatExample", dependencies: ["VigilPluginSDK"],
            path: "Examples/HeartbeatPlugin/Sources/VigilHeartbeatExample", swiftSettings: strictSettings,
            // SwiftPM gives a dynamic library no SONAME on Linux; Vigil requires a unique one.
            linkerSettings: [.unsafeFlags(["-Xlinker", "-soname=libVigilHeartbeatExample.so"])]),
        // The example host app (Examples/ExampleHost, a package of its own for users to copy),
        // compiled here too so that it keeps up with the library's API.
        .executableTarget(
            name: "ExampleHostSource", dependencies: ["Vigil", log, lifecycle],
            path: "Examples/ExampleHost/Sources/ExampleHost"),
        // The supervisor-only example host (Examples/SupervisorHost, a package of its own): the host
        // core and the supervisor, nothing else; compiled here too, and run by VigilCLITests.
        .executableTarget(
            name: "SupervisorHostSource", dependencies: ["VigilHostCore", "VigilSupervisor", log, lifecycle],
            path: "Examples/SupervisorHost/Sources/SupervisorHost"),

        // MARK: - Fixture hosts
        // A minimal host running silent-engine, in its own process for the restart-leak and ALSA
        // tests, and the host bench/silent-engine.sh and bench/soundscape.sh measure (Tests/Hosts;
        // the other benchmark hosts are in the Benchmarks/ package).
        .executableTarget(
            name: "SilentEngineBench", dependencies: ["VigilSilentEngine", "VigilPlugin", log],
            path: "Tests/Hosts/SilentEngineBench", swiftSettings: strictSettings),
        // README's library snippet, verbatim (HostExitTests checks it is), as a host app of its own:
        // what the host-lock, exit-status and log-label tests run in two real processes. Built with
        // a host package's default settings, as ExampleHostSource is (the snippet is what users write).
        .executableTarget(
            name: "LibraryHost", dependencies: ["Vigil", "VigilJournal", log, lifecycle],
            path: "Tests/Hosts/LibraryHost"),

        // MARK: - Fuzzing
        // docs/fuzzing.md: a harness for every parser that sees untrusted bytes (Tests/VigilFuzzTargets),
        // run on the seeds and regression inputs by VigilFuzzTests, and by the libFuzzer driver of the
        // nested Fuzz/ package (`vigil-fuzz`, built by scripts/fuzz.sh). The harnesses are here, not
        // there, because they call `package`-level entry points.
        .target(
            name: "VigilFuzzTargets",
            dependencies: [
                "VigilCore", "VigilCrypto", "VigilPlugin", "VigilSupervisorEngine", "VigilSoundscape", "VigilAnnounce",
                "VigilSoundFile", log,
            ],
            path: "Tests/VigilFuzzTargets", swiftSettings: strictSettings),
    ]
)

// MARK: - TUF client (issue 32)
// A TUF client (docs/signing.md): the metadata checks and the trusted set, pure and tested
// without a network (VigilTUF); plain HTTP over swift-nio (VigilTUFHTTP); and the conformance
// suite's client CLI (`vigil-tuf-client`); VigilRepository, the plugin repository commands, is the
// only part `vigil` links.
package.dependencies += [
    .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
]
package.products += [.executable(name: "vigil-tuf-client", targets: ["vigil-tuf-client"])]
package.targets += [
    // Canonical JSON, the four roles, signature thresholds (Ed25519 through VigilCrypto; ECDSA and
    // RSA through swift-crypto), the trusted set and the update workflow over a `TUFFetcher`.
    .target(
        name: "VigilTUF",
        dependencies: [
            "VigilCrypto", "VigilBase", .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ],
        swiftSettings: strictSettings),
    // A `TUFFetcher` over HTTP/1.1 and HTTPS (swift-nio, swift-nio-ssl): a deadline, a minimum rate
    // and a byte cap on every download.
    .target(
        name: "VigilTUFHTTP",
        dependencies: [
            "VigilTUF", .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ],
        swiftSettings: strictSettings),
    // `vigil plugin install|update|outdated` (docs/signing.md, "Plugin repositories"): `[repository]`'s
    // client over VigilTUF and VigilTUFHTTP, the staged, verified, all-or-nothing switch of the
    // plugin directory. Linked by `vigil` for those commands only: `vigil up` never reaches it.
    .target(
        name: "VigilRepository",
        dependencies: ["VigilTUF", "VigilTUFHTTP", "VigilCore", "VigilCrypto", "VigilPlugin", "VigilBase"],
        swiftSettings: strictSettings),
    // The tuf-conformance client CLI (`init`, `refresh`, `download`), run by scripts/tuf-conformance.sh.
    .executableTarget(
        name: "vigil-tuf-client",
        dependencies: [
            "VigilTUF", "VigilTUFHTTP", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ],
        path: "Sources/VigilTUFClient", swiftSettings: strictSettings),
]

// MARK: - Tests
// Test targets (Tests/), and VigilTestSupport: the fixtures they share (private PulseAudio,
// dbus-daemon, notify sockets in temporary directories).
package.targets += [
    .target(
        name: "VigilTestSupport",
        dependencies: [
            "VigilPlugin", log, .product(name: "SystemPackage", package: "swift-system"), "VigilCore",
            "VigilCrypto",
        ],
        path: "Tests/VigilTestSupport",
        exclude: ["Fixtures"],  // the D-Bus stand-in scripts, run through #filePath
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilPluginTests", dependencies: ["VigilPlugin", "VigilTestSupport"], swiftSettings: strictSettings),
    .testTarget(name: "VigilLibraryCheckTests", dependencies: ["VigilLibraryCheck"], swiftSettings: strictSettings),
    .testTarget(
        name: "VigilHostCheckTests",
        dependencies: ["VigilHostCheck", "VigilCore", "VigilPlugin", "VigilTestSupport"],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilCheckCommandsTests",
        dependencies: [
            "VigilCheckCommands", "VigilHostCheck", "VigilCore", "VigilTestSupport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilBaseTests",
        dependencies: ["VigilBase", "VigilTestSupport", .product(name: "SystemPackage", package: "swift-system")],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilCryptoTests", dependencies: ["VigilCrypto", "VigilTestSupport"],
        exclude: ["Fixtures"],  // golden files, read through #filePath (no resource bundle)
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilCoreTests", dependencies: ["VigilCore", "VigilCrypto", "VigilTestSupport"],
        exclude: ["Fixtures"],  // JSONTestSuite's cases, read through #filePath
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilAudioTests",
        dependencies: [
            "VigilAudio", "VigilSilentEngine", "VigilTestSupport", "VigilPlugin", "VigilMetrics", coreMetrics,
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilSupervisorTests",
        dependencies: [
            "VigilSupervisor", "VigilSupervisorEngine", "VigilSupervisorSettings", "VigilSupervisorDesktop",
            "VigilPlugin", "VigilTestSupport", "VigilHostCheck", .product(name: "Clocks", package: "swift-clocks"),
            "VigilMetrics", coreMetrics, .product(name: "MetricsTestKit", package: "swift-metrics"),
        ],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilTests",
        dependencies: [
            "Vigil", "VigilHostCore", "VigilCore", "VigilPlugin", "VigilTestSupport", log, lifecycle,
            .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            "VigilDBus", "VigilSoundscape", "VigilHostCheck", "VigilAudio", "VigilMetrics",
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilMetricsTests",
        dependencies: [
            "VigilMetricsExport", "VigilMetrics", "VigilCore", "VigilPlugin", "VigilHostCheck",
            "VigilTestSupport", "Vigil", "VigilAnnounce", "VigilSoundscape", log, lifecycle, coreMetrics,
        ],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilDBusTests", dependencies: ["VigilDBus", "VigilTestSupport", log, "VigilBase"],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilSoundFileTests", dependencies: ["VigilSoundFile", "VigilTestSupport"],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilSoundscapeTests",
        dependencies: ["VigilSoundscape", "VigilAudio", "VigilPlugin", "VigilSoundFile", "VigilTestSupport", log],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilCLITests", dependencies: ["VigilTestSupport", "VigilCrypto", "VigilMetrics"],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilSharedLibraryTests",
        dependencies: [
            "Vigil", "VigilCore", "VigilCrypto", "VigilPlugin", "VigilTestSupport", log,
            "VigilHostCheck", "VigilLibraryCheck", "VigilSharedLibrary", "VigilConfine", "VigilMetrics",
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ],
        exclude: ["Fixtures"],  // C sources the tests compile with cc, and a helper-protocol script
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilConfineTests", dependencies: ["VigilConfine", "VigilCore", "VigilPlugin", "VigilTestSupport"],
        exclude: ["Fixtures"],  // the attack plugin and the test launcher, compiled by the tests with gcc
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilAnnounceTests",
        dependencies: [
            "Vigil", "VigilAnnounce", "VigilAudio", "VigilCore", "VigilPlugin",
            "VigilTestSupport", log,
        ],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilFuzzTests", dependencies: ["VigilFuzzTargets", "VigilTestSupport"],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilRepositoryTests",
        dependencies: ["VigilRepository", "VigilCore", "VigilCrypto", "VigilPlugin", "VigilTestSupport"],
        swiftSettings: strictSettings),
    .testTarget(
        name: "VigilTUFTests",
        dependencies: [
            "VigilTUF", "VigilTUFHTTP", "VigilCrypto", "VigilTestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        ],
        swiftSettings: strictSettings),

]

/// Keeps only the targets `roots` need (themselves and their dependencies, transitively) and the
/// products made only of those targets.
@MainActor func keepOnly(targetsNeededBy roots: [String]) {
    var needed = Set<String>()
    var queue = roots
    while let name = queue.popLast() {
        guard needed.insert(name).inserted, let target = package.targets.first(where: { $0.name == name }) else {
            continue
        }
        for dependency in target.dependencies {
            switch dependency {
            case .targetItem(let name, _), .byNameItem(let name, _): queue.append(name)
            default: break
            }
        }
    }
    package.products.removeAll { product in
        let targets =
            (product as? Product.Library)?.targets ?? (product as? Product.Executable)?.targets
            ?? (product as? Product.Plugin)?.targets ?? []
        return !targets.allSatisfy { needed.contains($0) }
    }
    package.targets.removeAll { !needed.contains($0.name) }
    // And the packages no kept target uses: SwiftPM builds every product of a package the root
    // depends on, whether a target uses it or not.
    var used = Set<String>()
    for target in package.targets {
        for case .productItem(_, let name?, _, _) in target.dependencies { used.insert(name.lowercased()) }
    }
    package.dependencies.removeAll { dependency in
        guard case .sourceControl(_, let location, _) = dependency.kind,
            var identity = location.split(separator: "/").last.map({ String($0).lowercased() })
        else { return false }
        if identity.hasSuffix(".git") { identity.removeLast(4) }
        return !used.contains(identity)
    }
}

// `VIGIL_TEST_TARGETS=A,B` keeps only those test targets and what they need (scripts/sanitize.sh
// --concurrency sets it), so CI's thread-sanitized build compiles no test target it does not run,
// and no executable, SwiftPM plugin or library only others use (`vigil`, the TUF client with
// swift-crypto, the metrics exporter with swift-nio…): the suites it runs start none of them.
if let only = Context.environment["VIGIL_TEST_TARGETS"]?.split(separator: ",").map(String.init) {
    keepOnly(targetsNeededBy: package.targets.filter { $0.type == .test && only.contains($0.name) }.map(\.name))
}

// `VIGIL_API_CHECK=P1,P2,…` (scripts/check-api.sh sets it, for the baseline's manifest and this one)
// keeps only those library products and the targets they need: no SwiftPM plugin, whose tool is
// compiled for the host too, with its C modules (ours and TOMLKit's CTOML), which
// `swift package diagnose-api-breaking-changes` then hands the API digester twice ("redefinition
// of module"; SwiftPM issues 8103, 9254); and nothing else to build for the baseline.
if let checked = Context.environment["VIGIL_API_CHECK"]?.split(separator: ",").map(String.init) {
    keepOnly(
        targetsNeededBy: package.products.filter { checked.contains($0.name) }.flatMap {
            ($0 as? Product.Library)?.targets ?? []
        })
    package.products.removeAll { !checked.contains($0.name) }
}
