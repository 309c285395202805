import Foundation

/// The string folding behind `[c]` and `[d]` and the case-insensitive index.
///
/// `[c]` is Foundation's full Unicode case folding (`ß` matches `ss`, `Σ` matches `σ`); `[d]` removes
/// diacritics (`é` matches `e`). Both sides of a comparison are folded the same way and then compared
/// as UTF-8 bytes, so the case-insensitive index (which stores folded keys) agrees exactly with a scan.
enum CaseFolding {
    /// `text` folded for case (`caseInsensitive`) and/or diacritics.
    static func fold(_ text: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        if !caseInsensitive && !diacriticInsensitive { return text }
        var text = text
        return text.withUTF8 {
            withFolded(UnsafeRawBufferPointer($0), caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive) {
                String(decoding: $0, as: UTF8.self)
            }
        }
    }

    /// The case-folded UTF-8 bytes of UTF-8 text (the keys of the case-insensitive index).
    static func foldedBytes(_ utf8: UnsafeRawBufferPointer) -> [UInt8] {
        withFolded(utf8, caseInsensitive: true, diacriticInsensitive: false) { Array($0) }
    }

    /// Calls `body` with the UTF-8 bytes `text` folded. The common case, ASCII text folded for case only,
    /// is lowercased byte by byte into a temporary buffer (for ASCII that is exactly Foundation's folding),
    /// with no `String` made; other text goes through Foundation.
    static func withFolded<R>(_ text: UnsafeRawBufferPointer, caseInsensitive: Bool, diacriticInsensitive: Bool,
                              _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if caseInsensitive && !diacriticInsensitive {
            let lowered: R? = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Swift.max(text.count, 1)) { buffer in
                guard let to = UnsafeMutableRawPointer(buffer.baseAddress) else { return nil }
                if let from = text.baseAddress, !lowercaseASCII(from, to, text.count) { return nil }
                return body(UnsafeRawBufferPointer(start: to, count: text.count))
            }
            if let lowered { return lowered }
        }
        var options: String.CompareOptions = []
        if caseInsensitive { options.insert(.caseInsensitive) }
        if diacriticInsensitive { options.insert(.diacriticInsensitive) }
        var folded = String(decoding: text, as: UTF8.self).folding(options: options, locale: nil)
        return folded.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    /// Copies `count` bytes from `from` to `to` with `A`-`Z` lowercased; false (`to` then partly written)
    /// when a byte is not ASCII. Eight bytes at a time: with every byte below 0x80, adding 0x3F (or 0x25)
    /// to each sets its top bit exactly when it is at least 0x41 (or 0x5B), and no sum carries into the
    /// next byte; the upper-case bytes' top bits, shifted down to 0x20, are the bits to set.
    private static func lowercaseASCII(_ from: UnsafeRawPointer, _ to: UnsafeMutableRawPointer, _ count: Int) -> Bool {
        let high: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= count {
            let word = from.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if word & high != 0 { return false }
            let upper = (word &+ 0x3F3F_3F3F_3F3F_3F3F) & ~(word &+ 0x2525_2525_2525_2525) & high
            to.storeBytes(of: word | upper >> 2, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < count {
            let byte = from.load(fromByteOffset: i, as: UInt8.self)
            if byte >= 0x80 { return false }
            to.storeBytes(of: byte &- 0x41 < 26 ? byte | 0x20 : byte, toByteOffset: i, as: UInt8.self)
            i += 1
        }
        return true
    }
}
