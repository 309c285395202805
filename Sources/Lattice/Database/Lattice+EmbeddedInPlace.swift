/// Embedded objects updated in place by `add(_:update: .modified)` (and `create(_:value:update: .modified)`,
/// whose Lists come through the same path): the unmanaged embedded objects of an object updating a stored
/// one are written into the stored embedded objects in the same slots (a to-one link, or the same List
/// position) instead of replacing them. Equal values then change nothing, and a managed embedded object
/// held by the caller stays valid and sees the new values. `.all` replaces them, as Realm does.
extension Lattice {
    /// Notes, for the update of `object` (of class `info`, stored as `old`), that each unmanaged embedded
    /// object in one of its to-one links goes into the stored embedded object that link holds. Returns
    /// the objects noted, for ``releaseEmbeddedSlots(_:)``.
    func claimEmbeddedSlots(of object: Object, _ info: ClassInfo, old: RecordBuffer) -> [ObjectIdentifier] {
        guard let write = writer else { return [] }
        let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        let dynamic = info.type == DynamicObject.self ? unsafeDowncast(object, to: DynamicObject.self) : nil
        var claimed: [ObjectIdentifier] = []
        for p in info.columns where p.isLink && p.target?.schema.isEmbedded == true {
            let value = dynamic.map { $0.unmanagedValues[p.name] as Any } ?? p.accessor.value(at: base + p.offset) as Any
            guard let embedded = objectValue(unwrapAny(value)), embedded._lattice == nil,
                  let slot = old.withBytes({ RecordView($0)?.payload(p.column).flatMap(linkedKey) }) else { continue }
            write.embeddedSlots[ObjectIdentifier(embedded)] = slot
            claimed.append(ObjectIdentifier(embedded))
        }
        return claimed
    }

    /// Forgets slots noted by a claim (those not taken, when an error stopped the update).
    func releaseEmbeddedSlots(_ claimed: [ObjectIdentifier]) {
        for id in claimed { writer?.embeddedSlots[id] = nil }
    }

    /// The stored embedded object that the unmanaged embedded `object` is to be written into, taken
    /// (each slot is taken once), with its record; nil when it has none.
    func takeEmbeddedSlot(of object: Object, _ info: ClassInfo) throws -> (key: Int64, record: RecordBuffer)? {
        guard let write = writer, !write.embeddedSlots.isEmpty,
              let slot = write.embeddedSlots.removeValue(forKey: ObjectIdentifier(object)),
              let record = try fetchRecord(info, key: slot) else { return nil }
        return (slot, record)
    }

    /// Stores `elements` as the List of embedded objects `managed` of an object being updated: element i
    /// is written into the stored embedded object at position i where there is one, extra elements are
    /// appended and surplus stored ones deleted. Positions whose stored object stays are not rewritten.
    func updateEmbeddedList<E: _Persistable>(_ elements: [E], _ managed: ManagedCollection) throws {
        guard let write = writer else { return }
        let store = ListStore(lattice: self, property: managed.property, owner: managed.owner._key)
        let stored = try listPayloads(managed.property, owner: managed.owner._key)
        var claimed: [ObjectIdentifier] = []
        defer { releaseEmbeddedSlots(claimed) }
        for (element, payload) in zip(elements, stored) {
            guard let embedded = objectValue(element), embedded._lattice == nil,
                  let slot = payload.withUnsafeBytes(linkedKey) else { continue }
            write.embeddedSlots[ObjectIdentifier(embedded)] = slot
            claimed.append(ObjectIdentifier(embedded))
        }
        let payloads = try elements.map(managed.encode)
        let kept = zip(stored, payloads).prefix { $0 == $1 }.count
        try store.remove(kept..<stored.count)
        try store.insert(Array(payloads[kept...]), at: kept)
    }
}
