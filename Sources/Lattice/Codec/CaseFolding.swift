import Foundation

/// The string folding behind `[c]` and `[d]` and the case-insensitive index.
///
/// `[c]` is Foundation's full Unicode case folding (`ß` matches `ss`, `Σ` matches `σ`); `[d]` removes
/// diacritics (`é` matches `e`). Both sides of a comparison are folded the same way and then compared
/// as UTF-8 bytes, so the case-insensitive index (which stores folded keys) agrees exactly with a scan.
enum CaseFolding {
    /// `text` folded for case (`caseInsensitive`) and/or diacritics.
    static func fold(_ text: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        var options: String.CompareOptions = []
        if caseInsensitive { options.insert(.caseInsensitive) }
        if diacriticInsensitive { options.insert(.diacriticInsensitive) }
        if options.isEmpty { return text }
        // ASCII fast path: folding is plain lowercasing.
        if caseInsensitive && !diacriticInsensitive && text.utf8.allSatisfy({ $0 < 0x80 }) { return text.lowercased() }
        return text.folding(options: options, locale: nil)
    }

    /// The case-folded UTF-8 bytes of a string.
    static func foldedBytes(_ text: String) -> [UInt8] {
        Array(fold(text, caseInsensitive: true, diacriticInsensitive: false).utf8)
    }
}
