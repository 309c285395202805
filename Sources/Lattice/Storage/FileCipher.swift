import Crypto
import Foundation
import Synchronization

/// The keys of an encrypted file (see the *Encryption* article), derived from the configuration's 64-byte
/// key and the file's random salt with HKDF-SHA256, one subkey per purpose and per table:
///
/// - each sealed table's values are encrypted with AES-256-GCM under a key of that table (a value moved
///   to another table fails to open), with the entry's key as associated data (a value moved under
///   another key fails too) and a fresh random 96-bit nonce per write;
/// - each hashed table's keys (indexes, set elements, map keys) are HMAC-SHA256 of the plain key under
///   a key of that table, cut to 16 bytes: equal values give equal keys, nothing else is kept;
/// - the key check (`KeyCheck`) proves at open that the configured key is the file's.
final class FileCipher: @unchecked Sendable {
    // @unchecked Sendable is safe: every stored property is a `let` never mutated after init;
    // `SymmetricKey` (not marked Sendable by swift-crypto) is an immutable value whose storage is only read.
    /// The size of the configured key, in bytes (Realm's).
    static let keySize = 64
    /// Bytes of the file's salt.
    static let saltSize = 32
    /// Bytes an encrypted value adds: the nonce before it and the tag after it.
    static let overhead = nonceSize + tagSize
    static let nonceSize = 12
    static let tagSize = 16
    /// Bytes of a hashed key.
    static let hashSize = 16

    private let master: SymmetricKey
    let salt: [UInt8]
    /// The values this file's tables sealed or opened lately, kept decrypted (nil without memory for it).
    private let opened = OpenedValues()

    /// Derives the file's keys from the configured key (64 bytes, checked by the caller) and its salt.
    init(key: Data, salt: [UInt8]) {
        master = SymmetricKey(data: key)
        self.salt = salt
    }

    /// A subkey for `purpose` (for example `seal o:Dog`).
    private func subkey(_ purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: master, salt: salt, info: Array(("lattice-1 " + purpose).utf8), outputByteCount: 32)
    }

    /// The sealing of table `name`'s values.
    func sealing(_ name: String, plainKeys: [[UInt8]]) -> TableCipher {
        TableCipher(key: subkey("seal " + name), plainKeys: plainKeys, opened: opened)
    }

    /// The keyed hash of table `name`'s keys.
    func hashing(_ name: String) -> KeyHasher {
        KeyHasher(key: subkey("hash " + name))
    }

    /// The key check stored in a new file: the salt, then an encrypted constant.
    func keyCheck() throws -> [UInt8] {
        let box = try AES.GCM.seal(FileCipher.checkConstant, using: subkey("check"), authenticating: FileCipher.checkLabel)
        guard let combined = box.combined else { throw FileCipher.failure("the key check could not be sealed.") }
        return [FileCipher.version] + salt + Array(combined)
    }

    /// The salt of a stored key check; nil when it is not one.
    static func salt(ofKeyCheck record: UnsafeRawBufferPointer) -> [UInt8]? {
        guard record.count == 1 + saltSize + overhead + checkConstant.count, record[0] == version else { return nil }
        return Array(record[1..<(1 + saltSize)])
    }

    /// Whether this key opens the stored key check `record` (whose salt this cipher was made with).
    func opens(keyCheck record: UnsafeRawBufferPointer) -> Bool {
        guard FileCipher.salt(ofKeyCheck: record) != nil,
              let box = try? AES.GCM.SealedBox(combined: record[(1 + FileCipher.saltSize)...]),
              let plain = try? AES.GCM.open(box, using: subkey("check"), authenticating: FileCipher.checkLabel) else { return false }
        return plain.elementsEqual(FileCipher.checkConstant)
    }

    /// The scheme of the key check's first byte: AES-256-GCM values, HMAC-SHA256 keys, HKDF-SHA256 subkeys.
    private static let version: UInt8 = 1
    private static let checkConstant = Array("Lattice encrypted file".utf8)
    private static let checkLabel = Array("key check".utf8)

    /// A new random salt.
    static func newSalt() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    private static func failure(_ message: String) -> LatticeError {
        .storage(path: "", code: -1, message: message)
    }
}

/// The AES-256-GCM sealing of one table's values. Entries under `plainKeys` are checksummed instead of
/// encrypted (the metadata a reader needs before it has a key: the format and the key check).
///
/// Each call into swift-crypto's AES-GCM costs far more than the cipher itself (a context set up per
/// call, and its buffers), so values this cipher seals or opens are kept decrypted in the file's
/// `OpenedValues`, and reading one again copies it from there.
final class TableCipher: @unchecked Sendable {
    // @unchecked Sendable is safe: every property is a `let` never mutated after init; the key's storage
    // is only read (AES.GCM copies it into a context of its own per call); `OpenedValues` is thread-safe.
    private let key: SymmetricKey
    private let plainKeys: [[UInt8]]
    private let opened: OpenedValues?
    /// Tells this cipher's entries in `opened` from other tables' (unique in the process).
    private let tag: UInt64

    private static let tags = Atomic<UInt64>(0)

    init(key: SymmetricKey, plainKeys: [[UInt8]], opened: OpenedValues?) {
        self.key = key
        self.plainKeys = plainKeys
        self.opened = opened
        tag = Self.tags.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Whether the entry under `key` is checksummed rather than encrypted.
    @inline(__always)
    func isPlain(_ key: UnsafeRawBufferPointer) -> Bool {
        !plainKeys.isEmpty && plainKeys.contains { $0.elementsEqual(key) }
    }

    /// Bytes of the value a stored one of `storedCount` bytes holds; nil when it is too short to be one.
    @inline(__always)
    static func plainCount(_ storedCount: Int) -> Int? {
        storedCount >= FileCipher.overhead ? storedCount - FileCipher.overhead : nil
    }

    /// The stored form of `value` under `key`: nonce, ciphertext, tag (`FileCipher.overhead` more bytes).
    func seal(key entryKey: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> Data {
        let box = try AES.GCM.seal(value, using: key, nonce: AES.GCM.Nonce(), authenticating: entryKey)
        guard let combined = box.combined else { throw LatticeError.storage(path: "", code: -1, message: "AES-GCM sealing failed.") }
        combined.withUnsafeBytes { opened?.keep(tag, key: entryKey, stored: $0, plain: value) }
        return combined
    }

    /// Authenticates and decrypts stored value `sealed` under `key` into `plain`, which has room for
    /// `plainCount(sealed.count)` bytes; false when it fails authentication (damaged, moved, or another
    /// key's) or is too short.
    func open(key entryKey: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer, into plain: UnsafeMutableRawPointer) -> Bool {
        guard let count = Self.plainCount(sealed.count) else { return false }
        if opened?.copy(tag, key: entryKey, stored: sealed, to: plain, plainCount: count) == true { return true }
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
              let data = try? AES.GCM.open(box, using: key, authenticating: entryKey), data.count == count else { return false }
        data.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress, count > 0 { plain.copyMemory(from: base, byteCount: count) }
            opened?.keep(tag, key: entryKey, stored: sealed, plain: bytes)
        }
        return true
    }

    /// Whether stored value `sealed` under `key` authenticates (without keeping what it holds).
    func authenticates(key entryKey: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer) -> Bool {
        guard Self.plainCount(sealed.count) != nil else { return false }
        if opened?.contains(tag, key: entryKey, stored: sealed) == true { return true }
        guard let box = try? AES.GCM.SealedBox(combined: sealed) else { return false }
        return (try? AES.GCM.open(box, using: key, authenticating: entryKey)) != nil
    }
}

/// The keyed hash of one table's keys: HMAC-SHA256 cut to `FileCipher.hashSize` bytes. The HMAC's key
/// schedule is prepared once; each hash copies it.
struct KeyHasher: @unchecked Sendable {
    // @unchecked Sendable is safe: `prepared` is a `let` never mutated; `hash` mutates a copy, and the
    // HMAC's digest state is copy-on-write (its uniqueness check sees the shared reference and copies).
    private let prepared: HMAC<SHA256>

    init(key: SymmetricKey) {
        prepared = HMAC<SHA256>(key: key)
    }

    /// The stored key of plain key `bytes`.
    func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var h = prepared
        h.update(data: bytes)
        return h.finalize().withUnsafeBytes { Array($0.prefix(FileCipher.hashSize)) }
    }

    /// `hash` of an array.
    func hash(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0) }
    }
}
