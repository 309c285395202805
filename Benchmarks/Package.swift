// swift-tools-version:6.0
import PackageDescription

// The benchmark is its own package so that Lattice's users never resolve GRDB.
let package = Package(
    name: "LatticeBenchmarks",
    products: [
        .executable(name: "lattice-bench", targets: ["LatticeBench"]),
    ],
    dependencies: [
        .package(name: "Lattice", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // Raw LMDB access for the floor: the root package's CLMDB target is not a product.
        .systemLibrary(
            name: "CLMDBBench",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .executableTarget(
            name: "LatticeBench",
            dependencies: [
                .product(name: "Lattice", package: "Lattice"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "CLMDBBench",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
