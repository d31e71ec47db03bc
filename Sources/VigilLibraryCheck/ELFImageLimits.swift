// The caps an ELF image is read under, and the refusals it can end in.
extension ELFImage {
    package struct Limits: Sendable {
        /// The largest file (bytes).
        package var fileSize: Int = 64 << 20
        /// Program headers.
        package var programHeaders = 64
        /// Section headers.
        package var sections = 1024
        /// Dynamic entries up to and including `DT_NULL`.
        package var dynamicEntries = 4096
        /// Hash buckets, bloom words and symbols visited on one hash chain.
        package var symbols = 1 << 20
        /// Bytes of one dynamic string (`DT_NEEDED`, `DT_SONAME`, `DT_RUNPATH`), without its NUL.
        package var stringLength = 4096
        /// Notes in all `PT_NOTE` segments.
        package var notes = 256

        /// The limits Vigil applies.
        package static let standard = Limits()

        /// Creates the standard limits (change fields to test a cap).
        package init() {}
    }

    /// Why the bytes are not an acceptable shared object.
    package struct Problem: Error, Sendable {
        /// Each kind is its own refusal (``SharedLibraryErrorCode``).
        package enum Kind: Sendable, Hashable {
            /// Not a 64-bit little-endian ELF shared object for this machine, or truncated.
            case malformed
            /// Larger than ``Limits/fileSize``.
            case tooLarge
            /// A load segment's file bytes lie outside the file, or it has more file than memory bytes.
            case segmentOutsideFile
            /// A load segment's offset and address differ by other than whole pages, so the loader
            /// would map other bytes at its address than the file has at its offset.
            case segmentMisaligned
            /// Load segments out of address order or sharing a page: a later mapping replaces bytes.
            case segmentsOverlap
            /// `PT_DYNAMIC` or `PT_NOTE` says one offset, the load mapping of its address another.
            case viewMismatch
            /// A table the loader reads (dynamic array, strings, symbols, hashes, descriptor) is not
            /// wholly inside the file-backed part of one load segment.
            case addressUnmapped
            /// The dynamic array has no `DT_NULL` inside `PT_DYNAMIC`'s file size and its load segment.
            case dynamicUnterminated
            /// Two `PT_DYNAMIC` headers, or a table given twice in the dynamic array.
            case dynamicAmbiguous
            /// The section headers say something other than the program headers and dynamic array.
            case sectionsDisagree
            /// More than ``Limits/programHeaders``.
            case tooManySegments
            /// More than ``Limits/sections``.
            case tooManySections
            /// More than ``Limits/dynamicEntries``.
            case tooManyDynamicEntries
            /// More than ``Limits/symbols`` hash buckets, bloom words or symbols on a chain.
            case tooManySymbols
            /// A dynamic string longer than ``Limits/stringLength``.
            case stringTooLong
            /// More than ``Limits/notes``.
            case tooManyNotes
            /// A note (in particular the Vigil note) is malformed.
            case noteMalformed
        }

        package let kind: Kind
        package let reason: String

        package init(_ kind: Kind, _ reason: String) {
            self.kind = kind
            self.reason = reason
        }
    }
}
