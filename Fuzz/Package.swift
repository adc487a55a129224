// swift-tools-version: 6.0
// libFuzzer targets, kept out of the main package (they have no main of
// their own). Build: see Fuzz/README.md.
import PackageDescription

let package = Package(
    name: "kvcache-fuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(name: "FuzzRESP", dependencies: [.product(name: "RESP", package: "main")]),
        .executableTarget(name: "FuzzCommands", dependencies: [
            .product(name: "RESP", package: "main"),
            .product(name: "KVCacheServer", package: "main"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
