// swift-tools-version:6.0
import PackageDescription

// Lattice's tools live in their own package so that apps depending on the `Lattice` library never fetch
// swift-argument-parser. One directory per target under Sources/.

/// The checked-in outputs of `lattice-codegen` for the schema files of `Schemas/` (the golden files):
/// each is compiled as its own module, which proves the generated code builds under Swift 6 without
/// warnings. `Public` is `AllFeatures` generated with `--access-level public`.
let generatedModels = ["AllFeatures", "CarRepair", "ExamsV0", "ExamsV2", "FlashCards", "Newspaper", "Public", "Sensors", "ToDo"]

let swift6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "LatticeTools",
    products: [
        .executable(name: "lattice-codegen", targets: ["LatticeCodegen"]),
        .executable(name: "lattice", targets: ["LatticeCLI"]),
        .plugin(name: "LatticeCodegenPlugin", targets: ["LatticeCodegenPlugin"]),
        .library(name: "LatticeSchemaFile", targets: ["LatticeSchemaFile"]),
        .library(name: "LatticeSchemaConversion", targets: ["LatticeSchemaConversion"]),
    ],
    dependencies: [
        // Named, because a path dependency's identity is its directory's name, which differs between clones.
        .package(name: "Lattice", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // The schema file model, its parser (with source positions), validation, encoder and the Swift
        // generator. Depends on nothing but Foundation, so the code generator builds without the database.
        .target(name: "LatticeSchemaFile", swiftSettings: swift6),
        // Schema file <-> `Lattice.Schema` (the schema a database stores), for `lattice schema export`.
        .target(
            name: "LatticeSchemaConversion",
            dependencies: ["LatticeSchemaFile", .product(name: "Lattice", package: "Lattice")],
            swiftSettings: swift6
        ),
        .executableTarget(
            name: "LatticeCodegen",
            dependencies: ["LatticeSchemaFile", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swift6
        ),
        // `lattice`: works on any database file through the schema it stores (the dynamic API).
        .executableTarget(
            name: "LatticeCLI",
            dependencies: [
                "LatticeSchemaFile", "LatticeSchemaConversion",
                .product(name: "Lattice", package: "Lattice"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swift6
        ),
        .plugin(
            name: "LatticeCodegenPlugin",
            capability: .buildTool(),
            dependencies: ["LatticeCodegen"]
        ),
        .testTarget(
            name: "LatticeSchemaFileTests",
            dependencies: ["LatticeSchemaFile"],
            swiftSettings: swift6
        ),
        // Running the built tools as child processes, for the command-line tests.
        .target(name: "ToolsTestSupport", path: "Tests/ToolsTestSupport", swiftSettings: swift6),
        .testTarget(
            name: "LatticeCodegenTests",
            dependencies: ["LatticeCodegen", "ToolsTestSupport"],
            swiftSettings: swift6
        ),
        .testTarget(
            name: "LatticeCLITests",
            dependencies: ["LatticeCLI", "ToolsTestSupport", .product(name: "Lattice", package: "Lattice")],
            swiftSettings: swift6
        ),
        .testTarget(
            name: "LatticeSchemaConversionTests",
            dependencies: ["LatticeSchemaConversion", .product(name: "Lattice", package: "Lattice")]
                + generatedModels.map { .target(name: "Generated\($0)") },
            swiftSettings: swift6
        ),
    ] + generatedModels.map {
        .target(
            name: "Generated\($0)",
            dependencies: [.product(name: "Lattice", package: "Lattice")],
            path: "Tests/Generated/\($0)",
            // A warning in generated code fails the build (and so the tests).
            swiftSettings: swift6 + [.unsafeFlags(["-warnings-as-errors"])]
        )
    }
)
