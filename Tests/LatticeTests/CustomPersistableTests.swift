import Foundation
import XCTest
@testable import Lattice

// Types stored as another type: CustomPersistable and FailableCustomPersistable.

extension URL: FailableCustomPersistable {
    public typealias PersistedType = String
    public init?(persistedValue: String) { self.init(string: persistedValue) }
    public var persistableValue: String { absoluteString }
}

/// An amount of money kept as a Decimal.
struct CustomMoney: CustomPersistable, Hashable {
    var amount: Decimal
    init(_ amount: Decimal) { self.amount = amount }
    init(persistedValue: Decimal) { amount = persistedValue }
    var persistableValue: Decimal { amount }
}

/// A product code kept as a String (a primary key).
struct CustomSku: CustomPersistable, Hashable {
    var code: String
    init(_ code: String) { self.code = code }
    init(persistedValue: String) { code = persistedValue }
    var persistableValue: String { code }
}

/// A user handle: a String starting with "@"; other strings are no handle.
struct CustomHandle: FailableCustomPersistable, Hashable {
    var name: String
    init?(persistedValue: String) {
        guard persistedValue.hasPrefix("@") else { return nil }
        name = String(persistedValue.dropFirst())
    }
    init(name: String) { self.name = name }
    var persistableValue: String { "@" + name }
    static var fallbackValue: CustomHandle? { CustomHandle(name: "nobody") }
}

final class CustomShop: Object {
    @Persisted(primaryKey: true) var sku = CustomSku("")
    @Persisted var site: URL?
    @Persisted var price: CustomMoney
    @Persisted var discount: CustomMoney?
    @Persisted(indexed: true) var owner: CustomHandle
    @Persisted var manager = CustomHandle(name: "boss")
    @Persisted var links: List<URL?>
    @Persisted var staff: List<CustomHandle>
    @Persisted var prices: MutableSet<CustomMoney>
    @Persisted var offers: Map<String, CustomMoney>
    @Persisted var mirrors: Map<String, URL?>
}

/// The same class declared with the persisted types: the same schema.
enum CustomShopPlain {
    final class CustomShop: Object {
        @Persisted(primaryKey: true) var sku = ""
        @Persisted var site: String?
        @Persisted var price: Decimal
        @Persisted var discount: Decimal?
        @Persisted(indexed: true) var owner = ""
        @Persisted var manager = ""
        @Persisted var links: List<String?>
        @Persisted var staff: List<String>
        @Persisted var prices: MutableSet<Decimal>
        @Persisted var offers: Map<String, Decimal>
        @Persisted var mirrors: Map<String, String?>
    }
}

/// A URL that is not optional: URL converts no empty string and has no fallback value.
final class CustomRequiredSite: Object {
    @Persisted var site = URL(fileURLWithPath: "/")
}

/// URLs as non-optional elements: no value to read for a stored string that is no URL.
final class CustomRequiredLinks: Object {
    @Persisted var links: List<URL>
}

/// A custom type stored as another custom type (in the end, a String).
struct CustomLabel: CustomPersistable, Hashable {
    var sku: CustomSku
    init(persistedValue: CustomSku) { sku = persistedValue }
    var persistableValue: CustomSku { sku }
}

final class CustomLabelled: Object {
    @Persisted var label: CustomLabel
    @Persisted var spare: CustomLabel?
    @Persisted var labels: MutableSet<CustomLabel>
}

/// A number of at least 1000: rejects every small value a type-safe query probes with.
struct CustomLargeNumber: FailableCustomPersistable, Hashable {
    var value: Int
    init?(persistedValue: Int) {
        guard persistedValue >= 1000 else { return nil }
        value = persistedValue
    }
    var persistableValue: Int { value }
    static var fallbackValue: CustomLargeNumber? { CustomLargeNumber(persistedValue: 1000) }
}

final class CustomCounter: Object {
    @Persisted var label = ""
    @Persisted var count: CustomLargeNumber
}

final class CustomMappedTarget: Object {
    @Persisted var x = 0
}

/// A custom type persisted as an object, which Lattice does not offer.
struct CustomMappedToObject: CustomPersistable {
    init(persistedValue: CustomMappedTarget) {}
    var persistableValue: CustomMappedTarget { CustomMappedTarget() }
}

final class CustomObjectMapping: Object {
    @Persisted var point: CustomMappedToObject?
}

final class CustomPersistableTests: XCTestCase {
    private let example = URL(string: "https://example.com/shop")!
    private let other = URL(string: "https://other.org")!

    private func shop(_ sku: String, price: Decimal, site: URL? = nil, owner: String = "ann") -> CustomShop {
        let shop = CustomShop()
        shop.sku = CustomSku(sku)
        shop.site = site
        shop.price = CustomMoney(price)
        shop.owner = CustomHandle(name: owner)
        return shop
    }

    private func filled(_ db: TempDatabase) throws {
        let lattice = try db.open([CustomShop.self])
        try lattice.write {
            let a = shop("a", price: 10, site: example, owner: "ann")
            a.discount = CustomMoney(2)
            a.links.append(objectsIn: [example, nil, other])
            a.staff.append(objectsIn: [CustomHandle(name: "bo"), CustomHandle(name: "cy")])
            a.prices.insert(objectsIn: [CustomMoney(1), CustomMoney(2), CustomMoney(1)])
            a.offers["spring"] = CustomMoney(7)
            a.mirrors["eu"] = other
            a.mirrors["none"] = .some(nil)
            try lattice.add(a)
            let b = shop("b", price: 30, site: other, owner: "bo")
            b.manager = CustomHandle(name: "kim")
            try lattice.add(b)
            try lattice.add(shop("c", price: 20, owner: "cy"))
        }
    }

    func testPropertiesAndCollectionsRoundTripThroughTheFile() throws {
        let db = makeTempDatabase()
        try filled(db)
        let lattice = try db.open([CustomShop.self])
        let a = try XCTUnwrap(lattice.object(ofType: CustomShop.self, forPrimaryKey: CustomSku("a")))
        XCTAssertEqual(a.sku, CustomSku("a"))
        XCTAssertEqual(a.site, example)
        XCTAssertEqual(a.price, CustomMoney(10))
        XCTAssertEqual(a.discount, CustomMoney(2))
        XCTAssertEqual(a.owner, CustomHandle(name: "ann"))
        XCTAssertEqual(Array(a.links), [example, nil, other])
        XCTAssertEqual(Array(a.staff), [CustomHandle(name: "bo"), CustomHandle(name: "cy")])
        XCTAssertEqual(Set(a.prices), [CustomMoney(1), CustomMoney(2)])
        XCTAssertEqual(a.offers["spring"], CustomMoney(7))
        XCTAssertEqual(a.mirrors["eu"], .some(other))
        XCTAssertEqual(a.mirrors["none"], .some(nil))
        let c = try XCTUnwrap(lattice.object(ofType: CustomShop.self, forPrimaryKey: "c"), "the persisted value finds it too")
        XCTAssertNil(c.site)
        XCTAssertNil(c.discount)

        // Setters write the persisted value.
        try lattice.write {
            c.site = example
            c.price = CustomMoney(Decimal(string: "20.5")!)
            c.staff.append(CustomHandle(name: "di"))
        }
        let reopened = try db.open([CustomShop.self])
        let c2 = try XCTUnwrap(reopened.object(ofType: CustomShop.self, forPrimaryKey: CustomSku("c")))
        XCTAssertEqual(c2.site, example)
        XCTAssertEqual(c2.price, CustomMoney(Decimal(string: "20.5")!))
        XCTAssertEqual(Array(c2.staff), [CustomHandle(name: "di")])
    }

    func testTheSchemaIsThatOfThePersistedTypes() throws {
        let db = makeTempDatabase()
        try filled(db)
        let custom = try db.open([CustomShop.self]).schema["CustomShop"]
        // The plain declaration opens the same file with no migration and reads the persisted values.
        let plain = try db.open([CustomShopPlain.CustomShop.self])
        XCTAssertEqual(plain.schema["CustomShop"], custom)
        let a = try XCTUnwrap(plain.object(ofType: CustomShopPlain.CustomShop.self, forPrimaryKey: "a"))
        XCTAssertEqual(a.site, "https://example.com/shop")
        XCTAssertEqual(a.price, 10)
        XCTAssertEqual(a.owner, "@ann")
        XCTAssertEqual(Array(a.staff), ["@bo", "@cy"])
        XCTAssertEqual(a.offers["spring"], 7)
        XCTAssertEqual(custom?["site"]?.type, .string)
        XCTAssertEqual(custom?["site"]?.isOptional, true)
        XCTAssertEqual(custom?["price"]?.type, .decimal)
        XCTAssertEqual(custom?["price"]?.isOptional, false)
        XCTAssertEqual(custom?["owner"]?.isIndexed, true)
        XCTAssertEqual(custom?["sku"]?.isPrimaryKey, true)
    }

    func testDynamicObjectsAndMigrationsSeeThePersistedValues() throws {
        let db = makeTempDatabase()
        try filled(db)
        let dynamic = try Lattice(configuration: .init(fileURL: db.url, dynamicSchema: true))
        let a = try XCTUnwrap(dynamic.dynamicObject(ofType: "CustomShop", forPrimaryKey: "a"))
        XCTAssertEqual(a["site"] as? String, "https://example.com/shop")
        XCTAssertEqual(a["price"] as? Decimal, 10)
        XCTAssertEqual(a["owner"] as? String, "@ann")

        let seen = Locked<[String]>([])
        var config = db.configuration([CustomShop.self], schemaVersion: 1)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "CustomShop") { old, new in
                let owner = old?["owner"] as? String ?? "?"
                seen.withLock { $0.append(owner) }
                if old?["sku"] as? String == "c" { new?["site"] = "https://migrated.net" }
            }
        }
        let migrated = try Lattice(configuration: config)
        XCTAssertEqual(seen.withLock { $0.sorted() }, ["@ann", "@bo", "@cy"])
        XCTAssertEqual(migrated.object(ofType: CustomShop.self, forPrimaryKey: CustomSku("c"))?.site, URL(string: "https://migrated.net"))
    }

    func testCreateAcceptsCustomAndPersistedValues() throws {
        let db = makeTempDatabase()
        let lattice = try db.open([CustomShop.self])
        try lattice.write {
            _ = try lattice.create(CustomShop.self, value: ["sku": CustomSku("x"), "site": example, "price": CustomMoney(3),
                                                           "owner": CustomHandle(name: "xi"), "links": [example, other],
                                                           "offers": ["a": CustomMoney(1)]])
            _ = try lattice.create(CustomShop.self, value: ["sku": "y", "site": "https://y.io", "price": Decimal(4), "owner": "@yo",
                                                           "staff": ["@p", CustomHandle(name: "q")], "prices": [Decimal(5)],
                                                           "mirrors": ["m": "https://m.io"]])
        }
        let x = try XCTUnwrap(lattice.object(ofType: CustomShop.self, forPrimaryKey: "x"))
        XCTAssertEqual(x.site, example)
        XCTAssertEqual(x.price, CustomMoney(3))
        XCTAssertEqual(Array(x.links), [example, other])
        XCTAssertEqual(x.offers["a"], CustomMoney(1))
        let y = try XCTUnwrap(lattice.object(ofType: CustomShop.self, forPrimaryKey: "y"))
        XCTAssertEqual(y.site, URL(string: "https://y.io"))
        XCTAssertEqual(y.price, CustomMoney(4))
        XCTAssertEqual(y.owner, CustomHandle(name: "yo"))
        XCTAssertEqual(Array(y.staff), [CustomHandle(name: "p"), CustomHandle(name: "q")])
        XCTAssertEqual(Array(y.prices), [CustomMoney(5)])
        XCTAssertEqual(y.mirrors["m"], .some(URL(string: "https://m.io")))

        // A persisted value the type rejects, or a value of another type, is a wrong type.
        let rejected = latticeError(try lattice.write { _ = try lattice.create(CustomShop.self, value: ["sku": "z", "owner": "no-at"]) })
        guard case .wrongType(className: "CustomShop", property: "owner", _, _)? = rejected else {
            return XCTFail("\(String(describing: rejected))")
        }
        let wrong = latticeError(try lattice.write { _ = try lattice.create(CustomShop.self, value: ["sku": "z", "price": Date()]) })
        guard case .wrongType(className: "CustomShop", property: "price", _, _)? = wrong else {
            return XCTFail("\(String(describing: wrong))")
        }
        XCTAssertNil(lattice.object(ofType: CustomShop.self, forPrimaryKey: "z"))
    }

    func testStringQueriesCompareThePersistedValue() throws {
        let db = makeTempDatabase()
        try filled(db)
        let shops = try db.open([CustomShop.self]).objects(CustomShop.self)
        func skus(_ results: Results<CustomShop>) -> [String] { results.map(\.sku.code).sorted() }
        XCTAssertEqual(skus(try shops.filter("site == %@", example)), ["a"])
        XCTAssertEqual(skus(try shops.filter("site == %@", "https://other.org")), ["b"])
        XCTAssertEqual(skus(try shops.filter("site == nil")), ["c"])
        XCTAssertEqual(skus(try shops.filter("site IN %@", [example, other])), ["a", "b"])
        XCTAssertEqual(skus(try shops.filter("price > %@", CustomMoney(15))), ["b", "c"])
        XCTAssertEqual(skus(try shops.filter("price BETWEEN {%@, %@}", CustomMoney(10), CustomMoney(20))), ["a", "c"])
        XCTAssertEqual(skus(try shops.filter("owner == %@", CustomHandle(name: "bo"))), ["b"])
        XCTAssertEqual(skus(try shops.filter("ANY staff == %@", CustomHandle(name: "cy"))), ["a"])
        XCTAssertEqual(skus(try shops.filter("ANY links == %@", other)), ["a"])
        XCTAssertEqual(skus(try shops.filter("ANY offers.@allValues == %@", CustomMoney(7))), ["a"])
        XCTAssertEqual(skus(try shops.filter("sku == %@", CustomSku("c"))), ["c"])
        XCTAssertEqual(skus(try shops.filter("site BEGINSWITH 'https://ex'")), ["a"])
    }

    func testTypeSafeQueriesCompareThePersistedValue() throws {
        let db = makeTempDatabase()
        try filled(db)
        let shops = try db.open([CustomShop.self]).objects(CustomShop.self)
        func skus(_ results: Results<CustomShop>) -> [String] { results.map(\.sku.code).sorted() }
        let example = self.example, other = self.other
        XCTAssertEqual(skus(shops.where { $0.site == example }), ["a"])
        XCTAssertEqual(skus(shops.where { $0.site != example }), ["b", "c"])
        XCTAssertEqual(skus(shops.where { $0.site == nil }), ["c"])
        XCTAssertEqual(skus(shops.where { $0.site.in([example, other]) }), ["a", "b"])
        XCTAssertEqual(skus(shops.where { $0.price > CustomMoney(15) }), ["b", "c"])
        XCTAssertEqual(skus(shops.where { $0.price <= CustomMoney(20) }), ["a", "c"])
        XCTAssertEqual(skus(shops.where { $0.price.between(CustomMoney(15), CustomMoney(25)) }), ["c"])
        XCTAssertEqual(skus(shops.where { $0.discount < CustomMoney(5) }), ["a"])
        XCTAssertEqual(skus(shops.where { $0.owner == CustomHandle(name: "cy") }), ["c"])
        XCTAssertEqual(skus(shops.where { $0.sku == CustomSku("b") }), ["b"])
        XCTAssertEqual(skus(shops.where { $0.site.persistableValue.starts(with: "https://oth") }), ["b"])
        XCTAssertEqual(skus(shops.where { $0.staff == CustomHandle(name: "bo") }), ["a"])
        XCTAssertEqual(skus(shops.where { $0.links == other }), ["a"])
        XCTAssertEqual(skus(shops.where { $0.price > CustomMoney(15) && $0.site != nil }), ["b"])
        // Two properties of one failable type, told apart.
        XCTAssertEqual(skus(shops.where { $0.manager == CustomHandle(name: "boss") }), ["a", "c"])
        XCTAssertEqual(skus(shops.where { $0.owner == CustomHandle(name: "bo") }), ["b"])
        XCTAssertEqual(skus(shops.where { $0.manager.persistableValue == "@kim" }), ["b"])
    }

    func testSortingAndAggregatesUseThePersistedValue() throws {
        let db = makeTempDatabase()
        try filled(db)
        let lattice = try db.open([CustomShop.self])
        let shops = lattice.objects(CustomShop.self)
        XCTAssertEqual(try shops.sorted(byKeyPath: "price").map(\.sku.code), ["a", "c", "b"])
        XCTAssertEqual(try shops.sorted(by: \.price, ascending: false).map(\.sku.code), ["b", "c", "a"])
        XCTAssertEqual(try shops.sorted(by: \.site).map(\.sku.code), ["c", "a", "b"], "nil first, then by the stored string")
        XCTAssertEqual(try shops.sorted(by: \.manager).map(\.sku.code).first, "a", "'@boss' before '@kim'")
        XCTAssertEqual(try shops.sorted(by: \.manager, ascending: false).map(\.sku.code).first, "b")
        XCTAssertEqual(try shops.sum(of: \.price), CustomMoney(60))
        XCTAssertEqual(try shops.max(of: \.price), CustomMoney(30))
        XCTAssertEqual(try shops.min(ofProperty: "price") as CustomMoney?, CustomMoney(10))
        XCTAssertEqual(try shops.average(of: \.price), CustomMoney(20))
        XCTAssertEqual(try shops.sum(ofProperty: "price") as Decimal, 60, "or as the persisted type")
    }

    func testPrimaryKeyAndIndex() throws {
        let db = makeTempDatabase()
        try filled(db)
        let lattice = try db.open([CustomShop.self])
        let error = latticeError(try lattice.write { try lattice.add(self.shop("a", price: 1)) })
        guard case .duplicatePrimaryKey(className: "CustomShop", _)? = error else { return XCTFail("\(String(describing: error))") }
        try lattice.write { try lattice.add(shop("a", price: 99, owner: "zed"), update: .modified) }
        XCTAssertEqual(lattice.object(ofType: CustomShop.self, forPrimaryKey: CustomSku("a"))?.price, CustomMoney(99))
        XCTAssertEqual(lattice.objects(CustomShop.self).where { $0.owner == CustomHandle(name: "zed") }.map(\.sku.code), ["a"])
        XCTAssertEqual(try lattice.objects(CustomShop.self).filter("owner == %@", CustomHandle(name: "ann")).count, 0,
                       "the index entry of the former owner is gone")
        XCTAssertTrue(lattice.verify().isEmpty)
    }

    func testAccessByNameGivesTheCustomType() throws {
        let db = makeTempDatabase()
        try filled(db)
        let lattice = try db.open([CustomShop.self])
        let a = try XCTUnwrap(lattice.object(ofType: CustomShop.self, forPrimaryKey: "a"))
        XCTAssertEqual(a["site"] as? URL, example)
        XCTAssertEqual(a["price"] as? CustomMoney, CustomMoney(10))
        XCTAssertEqual(a.value(forKeyPath: "owner") as? CustomHandle, CustomHandle(name: "ann"))
        try lattice.write {
            a["site"] = other
            a["price"] = Decimal(11)
            try a.setValue("@eve", forProperty: "owner")
        }
        XCTAssertEqual(a.site, other)
        XCTAssertEqual(a.price, CustomMoney(11))
        XCTAssertEqual(a.owner, CustomHandle(name: "eve"))
        XCTAssertThrowsError(try lattice.write { try a.setValue("eve", forProperty: "owner") })
        XCTAssertEqual(a.owner, CustomHandle(name: "eve"))

        let unmanaged = shop("u", price: 5, site: example)
        XCTAssertEqual(unmanaged["site"] as? URL, example)
        unmanaged["price"] = CustomMoney(6)
        XCTAssertEqual(unmanaged.price, CustomMoney(6))
    }

    func testObservationReportsCustomValues() throws {
        let db = makeTempDatabase()
        try filled(db)
        let lattice = try db.open([CustomShop.self])
        let a = try XCTUnwrap(lattice.object(ofType: CustomShop.self, forPrimaryKey: "a"))
        var changes: [PropertyChange] = []
        let token = a.observe { change in
            if case .change(_, let properties) = change { changes += properties }
        }
        lattice.refresh()
        try lattice.write {
            a.price = CustomMoney(12)
            a.site = nil
        }
        lattice.refresh()
        withExtendedLifetime(token) {}
        let byName = Dictionary(changes.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
        XCTAssertEqual(byName["price"]?.oldValue as? CustomMoney, CustomMoney(10))
        XCTAssertEqual(byName["price"]?.newValue as? CustomMoney, CustomMoney(12))
        XCTAssertEqual(byName["site"]?.oldValue as? URL, example)
        XCTAssertNil(byName["site"]?.newValue ?? nil)
    }

    func testFrozenObjectsKeepTheirCustomValues() throws {
        let db = makeTempDatabase()
        try filled(db)
        let lattice = try db.open([CustomShop.self])
        let a = try XCTUnwrap(lattice.object(ofType: CustomShop.self, forPrimaryKey: "a"))
        let frozen = a.freeze()
        try lattice.write { a.price = CustomMoney(1) }
        XCTAssertEqual(frozen.price, CustomMoney(10))
        XCTAssertEqual(frozen.site, example)
        XCTAssertEqual(Array(frozen.staff), [CustomHandle(name: "bo"), CustomHandle(name: "cy")])
        XCTAssertEqual(a.price, CustomMoney(1))
    }

    /// Stored values the type rejects (written by another program, here the plain declaration) read as
    /// nil where nil is a value, else as the fallback value; queries still see what is stored.
    func testRejectedStoredValuesReadAsNilOrTheFallback() throws {
        let db = makeTempDatabase()
        do {
            let plain = try db.open([CustomShopPlain.CustomShop.self])
            try plain.write {
                _ = try plain.create(CustomShopPlain.CustomShop.self, value: ["sku": "r", "site": "", "owner": "robot",
                                                                             "links": ["", "https://ok.io"], "staff": ["x", "@y"],
                                                                             "mirrors": ["bad": ""]])
            }
        }
        let lattice = try db.open([CustomShop.self])
        let r = try XCTUnwrap(lattice.object(ofType: CustomShop.self, forPrimaryKey: "r"))
        XCTAssertNil(r.site)
        XCTAssertEqual(r.owner, CustomHandle(name: "nobody"))
        XCTAssertEqual(Array(r.links), [nil, URL(string: "https://ok.io")])
        XCTAssertEqual(Array(r.staff), [CustomHandle(name: "nobody"), CustomHandle(name: "y")])
        XCTAssertEqual(r.mirrors["bad"], .some(nil))
        XCTAssertNil(r["site"] ?? nil)
        XCTAssertEqual(try lattice.objects(CustomShop.self).filter("owner == 'robot'").count, 1)
        XCTAssertEqual(try lattice.objects(CustomShop.self).filter("owner == %@", CustomHandle(name: "nobody")).count, 0)
        XCTAssertTrue(lattice.verify().isEmpty)
    }

    func testDeclarationsWithNoValueToReadAreRefused() throws {
        for type in [CustomRequiredSite.self, CustomRequiredLinks.self] as [Object.Type] {
            let error = latticeError(try makeTempDatabase().open([type]))
            guard case .invalidSchema(className: "\(type)", let reason)? = error else { XCTFail("\(String(describing: error))"); continue }
            XCTAssertTrue(reason.contains("fallbackValue"), reason)
        }
        let error = latticeError(try makeTempDatabase().open([CustomObjectMapping.self, CustomMappedTarget.self]))
        guard case .invalidSchema(className: "CustomObjectMapping", let reason)? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertTrue(reason.contains("value type"), reason)
    }

    func testInitWithValueAcceptsCustomAndPersistedValues() throws {
        let shop = try CustomShop(value: ["sku": "u", "site": "https://u.io", "price": CustomMoney(2), "discount": Decimal(1),
                                          "staff": ["@a", CustomHandle(name: "b")], "links": [nil, example] as [URL?]])
        XCTAssertEqual(shop.sku, CustomSku("u"))
        XCTAssertEqual(shop.site, URL(string: "https://u.io"))
        XCTAssertEqual(shop.price, CustomMoney(2))
        XCTAssertEqual(shop.discount, CustomMoney(1))
        XCTAssertEqual(Array(shop.staff), [CustomHandle(name: "a"), CustomHandle(name: "b")])
        XCTAssertEqual(Array(shop.links), [nil, example])
        // A value the type rejects is an error, not a silent nil, even where nil is a value.
        XCTAssertThrowsError(try CustomShop(value: ["site": ""]))
        XCTAssertThrowsError(try CustomShop(value: ["staff": ["no-at"]]))
    }

    func testACustomTypeStoredAsAnother() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try db.open([CustomLabelled.self])
            try lattice.write {
                _ = try lattice.create(CustomLabelled.self, value: ["label": CustomLabel(persistedValue: CustomSku("x")), "spare": "y",
                                                                   "labels": ["p", CustomSku("q")]])
            }
        }
        let lattice = try db.open([CustomLabelled.self])
        XCTAssertEqual(lattice.schema["CustomLabelled"]?["label"]?.type, .string)
        let object = try XCTUnwrap(lattice.objects(CustomLabelled.self).first)
        XCTAssertEqual(object.label.sku, CustomSku("x"))
        XCTAssertEqual(object.spare?.sku, CustomSku("y"))
        XCTAssertEqual(Set(object.labels.map(\.sku.code)), ["p", "q"])
        XCTAssertEqual(try lattice.objects(CustomLabelled.self).filter("label == %@ AND spare == %@", CustomLabel(persistedValue: CustomSku("x")),
                                                                        CustomSku("y")).count, 1)
        XCTAssertEqual(lattice.objects(CustomLabelled.self).where { $0.label == CustomLabel(persistedValue: CustomSku("x")) }.count, 1)
    }

    func testTypeSafeQueryOnATypeRejectingEveryProbe() throws {
        let lattice = try makeTempDatabase().open([CustomCounter.self])
        try lattice.write {
            _ = try lattice.create(CustomCounter.self, value: ["label": "small", "count": 1000])
            _ = try lattice.create(CustomCounter.self, value: ["label": "big", "count": CustomLargeNumber(persistedValue: 5000) as Any])
        }
        let counters = lattice.objects(CustomCounter.self)
        let threshold = try XCTUnwrap(CustomLargeNumber(persistedValue: 2000))
        XCTAssertEqual(counters.where { $0.count > threshold }.map(\.label), ["big"])
        XCTAssertEqual(try counters.sorted(by: \.count, ascending: false).map(\.label), ["big", "small"])
        XCTAssertEqual(try counters.max(of: \.count)?.value, 5000)
    }

    func testUnmanagedCollectionsAndDefaults() {
        let shop = CustomShop()
        XCTAssertEqual(shop.price, CustomMoney(0), "the persisted type's default")
        XCTAssertEqual(shop.owner, CustomHandle(name: "nobody"), "the fallback value")
        XCTAssertNil(shop.site)
        shop.links.append(example)
        shop.offers["k"] = CustomMoney(1)
        XCTAssertEqual(Array(shop.links), [example])
        XCTAssertEqual(shop.offers["k"], CustomMoney(1))
        let shops = [self.shop("a", price: 1), self.shop("b", price: 4)]
        XCTAssertEqual(try ObjectAggregatesProbe.sum(shops), 5)
    }
}

/// Sums the prices of objects at hand through the by-name aggregate of unmanaged objects.
enum ObjectAggregatesProbe {
    static func sum(_ shops: [CustomShop]) throws -> Decimal {
        let list = List<CustomShop>()
        list.append(objectsIn: shops)
        return try list.sum(ofProperty: "price")
    }
}
