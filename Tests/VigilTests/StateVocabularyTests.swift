import Foundation
import Testing
import Vigil
import VigilCore
import VigilPlugin
import VigilTestSupport

/// The one vocabulary of plugin states (docs/states.md): the running host's states, its status
/// document and the documented table use the words of `PluginStateName`, and only those.
@Suite struct StateVocabularyTests {
    static let audio = UnmetRequirement(
        requirement: HostRequirement(kind: .audioOutput), problem: "needs an audio output", remedy: "start one")
    static let service = UnmetRequirement(
        requirement: HostRequirement(kind: .service("supervisor")), problem: "requires services to include",
        remedy: "add it")

    @Test("each PluginState has its word: idle is stopped; unmet environment is waiting, a missing declaration blocked")
    func words() {
        let failure = PluginFailure(code: .plugin(.startFailed), plugin: "p", message: "no")
        let cases: [(PluginState, PluginStateName)] = [
            (.idle, .stopped), (.starting, .starting), (.running, .running), (.stopping, .stopping),
            (.interrupted(reason: "r"), .interrupted), (.failed(failure), .failed), (.blocked([Self.audio]), .waiting),
            (.blocked([Self.service]), .blocked), (.blocked([Self.audio, Self.service]), .blocked),
        ]
        for (state, word) in cases {
            #expect(state.word == word, "\(state)")
            #expect(state.name == word.rawValue)
        }
        #expect(
            PluginState.blocked([Self.audio]).description
                == "waiting for an audio output: needs an audio output — start one")
        // Both unmet: the declaration, which a restart cannot fix by itself, comes first.
        #expect(
            PluginState.blocked([Self.audio, Self.service]).description
                == "blocked by a missing declaration: requires services to include — add it; needs an audio output — start one"
        )
    }

    @Test("the status document (vigil.status/v2) writes the words and reads them back to the same states")
    func statusDocument() throws {
        let states: [PluginState] = [.idle, .running, .blocked([Self.audio]), .blocked([Self.service])]
        let status = HostStatus(
            pid: 7, hostName: "h", configPath: nil,
            plugins: states.enumerated().map {
                PluginStatus(name: "p\($0.offset)", version: nil, state: $0.element, since: 0, details: [:])
            })
        let data = status.jsonData()
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(document["schema"] as? String == "vigil.status/v2")
        let plugins = try #require(document["plugins"] as? [[String: Any]])
        #expect(plugins.map { $0["state"] as? String } == ["stopped", "running", "waiting", "blocked"])
        let read = try HostStatus(jsonData: data)
        #expect(read.plugins.map(\.state) == states)
        // A v1 document is another version's: refused, not misread.
        let v1 = #"{"schema":"vigil.status/v1","pid":7,"host":"h","plugins":[]}"#
        #expect(throws: VigilError.self) { _ = try HostStatus(jsonData: Data(v1.utf8)) }
    }

    @Test("docs/states.md's table has exactly the words of PluginStateName")
    func documentedTable() throws {
        let text = try TextFile.read(VigilExecutable.packageRoot + "/docs/states.md")
        let words = text.split(separator: "\n").filter { $0.hasPrefix("| `") }.compactMap { line in
            line.dropFirst(3).split(separator: "`").first.map(String.init)
        }
        #expect(words == PluginStateName.allCases.map(\.rawValue), "\(words)")
    }
}
