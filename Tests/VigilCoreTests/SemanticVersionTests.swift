import Testing
import VigilCore
import VigilTestSupport

@Suite struct SemanticVersionTests {
    func v(_ s: String) -> SemanticVersion { SemanticVersion(s)! }

    /// The precedence examples of SemVer 2.0.0 §11, each strictly below the next.
    @Test func specExamplesAreInOrder() {
        let chains = [
            ["1.0.0", "2.0.0", "2.1.0", "2.1.1"],
            ["1.0.0-alpha", "1.0.0"],
            [
                "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
                "1.0.0-rc.1", "1.0.0",
            ],
        ]
        for chain in chains {
            for (i, a) in chain.enumerated() {
                for b in chain[(i + 1)...] {
                    #expect(v(a) < v(b), "\(a) < \(b)")
                    #expect(!(v(b) < v(a)), "not \(b) < \(a)")
                }
            }
        }
    }

    /// The cases the Version package got wrong: a hyphen-led identifier is alphanumeric (not −1),
    /// and numeric identifiers longer than 64 bits compare numerically (not as text).
    @Test func alphanumericAndLongNumericIdentifiers() {
        #expect(v("2.0.0-0") < v("2.0.0--1"))
        #expect(v("2.0.0--1") < v("2.0.0"))
        #expect(v("1.0.0-9") < v("1.0.0-18446744073709551616"))
        #expect(v("1.0.0-18446744073709551616") < v("1.0.0-99999999999999999999"))
        #expect(v("1.0.0-99999999999999999999") < v("1.0.0-a"))
        #expect(v("9.0.0") < v("10.0.0"))
        #expect(v("99999999999999999999.0.0") < v("100000000000000000000.0.0"))
        #expect(v("1.0.0-A") < v("1.0.0-a"), "ASCII order: upper case first")
    }

    @Test func buildMetadataIsIgnoredForPrecedenceAndEquality() {
        #expect(v("1.0.0+a") == v("1.0.0+b"))
        #expect(!(v("1.0.0+a") < v("1.0.0+b")) && !(v("1.0.0+b") < v("1.0.0+a")))
        #expect(Set([v("1.0.0+a"), v("1.0.0+b"), v("1.0.0")]).count == 1)
        #expect(v("1.0.0-rc.1+build.5").description == "1.0.0-rc.1+build.5")
    }

    @Test(arguments: [
        "0.0.4", "1.2.3", "10.20.30", "1.1.2-prerelease+meta", "1.1.2+meta", "1.1.2+meta-valid", "1.0.0-alpha",
        "1.0.0-beta", "1.0.0-alpha.beta", "1.0.0-alpha.beta.1", "1.0.0-alpha.1", "1.0.0-alpha0.valid",
        "1.0.0-alpha.0valid", "1.0.0-alpha-a.b-c-somethinglong+build.1-aef.1-its-okay", "1.0.0-rc.1+build.1",
        "2.0.0-rc.1+build.123", "1.2.3-beta", "10.2.3-DEV-SNAPSHOT", "1.2.3-SNAPSHOT-123", "2.0.0+build.1848",
        "2.0.1-alpha.1227", "1.0.0-alpha+beta", "1.2.3----RC-SNAPSHOT.12.9.1--.12+788", "1.2.3----R-S.12.9.1--.12+meta",
        "1.2.3----RC-SNAPSHOT.12.9.1--.12", "1.0.0+0.build.1-rc.10000aaa-kk-0.1",
        "99999999999999999999999.999999999999999999.99999999999999999", "1.0.0-0A.is.legal",
    ])
    func specValidVersionsParseAndRoundTrip(text: String) {
        #expect(SemanticVersion(text)?.description == text)
    }

    @Test(arguments: [
        "1", "1.2", "1.2.3-0123", "1.2.3-0123.0123", "1.1.2+.123", "+invalid", "-invalid", "-invalid+invalid",
        "-invalid.01", "alpha", "alpha.beta", "alpha.beta.1", "alpha.1", "alpha+beta", "alpha_beta", "alpha.",
        "alpha..", "beta", "1.0.0-alpha_beta", "-alpha.", "1.0.0-alpha..", "1.0.0-alpha..1", "1.0.0-alpha...1",
        "1.0.0-alpha....1", "1.0.0-alpha.....1", "1.0.0-alpha......1", "1.0.0-alpha.......1", "01.1.1", "1.01.1",
        "1.1.01", "1.2.3.DEV", "1.2-SNAPSHOT", "1.2.31.2.3----RC-SNAPSHOT.12.09.1--..12+788", "1.2-RC-SNAPSHOT",
        "-1.0.3-gamma+b7718", "+justmeta", "9.8.7+meta+meta", "9.8.7-whatever+meta+meta", "", "1.0.0-", "1.0.0+",
        "1.0.0-é", " 1.0.0", "1.0.0 ",
    ])
    func specInvalidVersionsAreRefused(text: String) {
        #expect(SemanticVersion(text) == nil)
    }

    /// Sorting random versions agrees with a reference ordering written independently from §11:
    /// each version becomes a list of fixed-width keys (numbers left-padded with zeros so text
    /// order is numeric order), compared as text.
    @Test func sortingAgreesWithAReferenceOrdering() {
        var rng = SplitMix64(seed: 0x5EED_0F_5E3)
        let versions = (0..<400).map { _ in Self.randomVersion(&rng) }
        let parsed = versions.map { (text: $0, version: SemanticVersion($0)!, key: Self.referenceKey($0)) }
        for a in parsed {
            for b in parsed {
                let reference = Self.referenceCompare(a.key, b.key)
                let actual = a.version < b.version ? -1 : b.version < a.version ? 1 : 0
                if reference != actual {
                    Issue.record("\(a.text) vs \(b.text): reference \(reference), got \(actual)")
                    return
                }
            }
        }
        let sorted = parsed.sorted { $0.version < $1.version }
        for (a, b) in zip(sorted, sorted.dropFirst()) { #expect(Self.referenceCompare(a.key, b.key) <= 0) }
    }

    static func randomVersion(_ rng: inout SplitMix64) -> String {
        func number() -> String {
            switch rng.next() % 4 {
            case 0: return String(rng.next() % 3)
            case 1: return String(rng.next() % 20)
            case 2: return "1" + String(repeating: "9", count: Int(rng.next() % 25))
            default:
                return "1" + String((0..<Int(rng.next() % 22)).map { _ in "0123456789".randomElement(using: &rng)! })
            }
        }
        func identifier() -> String {
            if rng.next() % 2 == 0 { return number() }
            let alphabet = Array("-aAbz0129")
            var s = String((0..<Int(1 + rng.next() % 4)).map { _ in alphabet.randomElement(using: &rng)! })
            if s.allSatisfy(\.isNumber) { s += "x" }
            return s
        }
        var text = "\(rng.next() % 3).\(rng.next() % 3 == 0 ? number() : "1").\(rng.next() % 3)"
        if rng.next() % 4 != 0 {
            text += "-" + (0..<Int(1 + rng.next() % 3)).map { _ in identifier() }.joined(separator: ".")
        }
        if rng.next() % 3 == 0 { text += "+" + identifier() }
        return text
    }

    /// A version as §11 compares it: the three numbers left-padded to a fixed width (so text order
    /// is numeric order), then the pre-release identifiers (`nil` for a release), build dropped.
    typealias ReferenceKey = (core: [String], pre: [(numeric: Bool, text: String)]?)

    static func referenceKey(_ text: String) -> ReferenceKey {
        func pad(_ digits: String) -> String { String(repeating: "0", count: 64 - digits.count) + digits }
        let noBuild = text.split(separator: "+", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let dash = noBuild.firstIndex(of: "-")
        let core = (dash.map { noBuild[..<$0] } ?? noBuild).split(separator: ".").map { pad(String($0)) }
        let pre = dash.map {
            noBuild[noBuild.index(after: $0)...].split(separator: ".").map { id in
                id.allSatisfy(\.isNumber) ? (true, pad(String(id))) : (false, String(id))
            }
        }
        return (core, pre)
    }

    /// −1, 0 or 1, from §11 alone.
    static func referenceCompare(_ a: ReferenceKey, _ b: ReferenceKey) -> Int {
        func compareText(_ x: String, _ y: String) -> Int {
            x == y ? 0 : Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8)) ? -1 : 1
        }
        for (x, y) in zip(a.core, b.core) where x != y { return compareText(x, y) }
        switch (a.pre, b.pre) {
        case (nil, nil): return 0
        case (nil, _): return 1
        case (_, nil): return -1
        case (let pa?, let pb?):
            for (x, y) in zip(pa, pb) where x.text != y.text || x.numeric != y.numeric {
                if x.numeric != y.numeric { return x.numeric ? -1 : 1 }
                return compareText(x.text, y.text)
            }
            return pa.count == pb.count ? 0 : pa.count < pb.count ? -1 : 1
        }
    }
}
