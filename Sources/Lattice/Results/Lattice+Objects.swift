// The handle's entry points into the Results layer: a class's objects as lazy, live results.

extension Lattice {
    /// All objects of a class: a lazy, live ``Results``. Its `count` decodes nothing.
    /// A class that is not in the configuration's `objectTypes`, or an embedded class (only reachable
    /// through its parents), gives empty results.
    public func objects<T: Object>(_ type: T.Type) -> Results<T> {
        Results(lattice: self, info: classInfo(type).flatMap { $0.schema.isEmbedded ? nil : $0 })
    }

    /// All objects of the stored class `className`, as ``DynamicObject``s: a lazy, live ``Results`` with
    /// the whole query language (`filter`, `sorted`, `distinct`, aggregates).
    ///
    /// On every handle: on one opened with model classes, for the classes of its ``schema``; the results
    /// see the objects of the model class (and its writes), and their links lead to dynamic objects.
    ///
    /// - Precondition: `className` is a top-level class of ``schema``. As this cannot throw (Realm's
    ///   signature), a name that is no class of the schema, or an embedded class (reachable only through
    ///   its parents), stops the program with a message naming it, as Realm's `dynamicObjects` raises;
    ///   check `schema[className]` first when the name comes from outside.
    public func dynamicObjects(_ className: String) -> Results<DynamicObject> {
        do {
            let info = try dynamicClass(className)
            if info.schema.isEmbedded {
                throw LatticeError.embeddedObject(className: className, reason: "it is only reachable through its parents' properties.")
            }
            return Results(lattice: self, info: info)
        } catch {
            preconditionFailure("\(error)")
        }
    }
}
