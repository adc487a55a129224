import Foundation

/// Redis's geohash (geohash.c, geohash_helper.c): a point is a 52-bit
/// interleaved hash (26 steps of longitude and latitude, latitude limited
/// to ±85.05112878 as in EPSG:3785) stored as a sorted set's score, so a
/// geo set here and in Redis hold the same scores. Distances use Redis's
/// haversine on a sphere of 6372797.560856 m. Pure functions.
enum GeoHash {
    static let longitudeMin = -180.0
    static let longitudeMax = 180.0
    static let latitudeMin = -85.05112878
    static let latitudeMax = 85.05112878
    static let stepMax: UInt8 = 26
    static let earthRadius = 6372797.560856
    static let mercatorMax = 20037726.37
    private static let degreesToRadians = Double.pi / 180.0

    struct Bits: Equatable {
        var bits: UInt64
        var step: UInt8
        var isZero: Bool { bits == 0 && step == 0 }
        static let zero = Bits(bits: 0, step: 0)
    }

    struct Range {
        var min: Double
        var max: Double
    }

    struct Area {
        var hash: Bits
        var longitude: Range
        var latitude: Range
    }

    static let longitudeRange = Range(min: longitudeMin, max: longitudeMax)
    static let latitudeRange = Range(min: latitudeMin, max: latitudeMax)

    // MARK: Bits

    static func interleave(_ xlo: UInt32, _ ylo: UInt32) -> UInt64 {
        let b: [UInt64] = [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF]
        let s: [UInt64] = [1, 2, 4, 8, 16]
        var x = UInt64(xlo), y = UInt64(ylo)
        for i in stride(from: 4, through: 0, by: -1) {
            x = (x | (x << s[i])) & b[i]
            y = (y | (y << s[i])) & b[i]
        }
        return x | (y << 1)
    }

    static func deinterleave(_ interleaved: UInt64) -> UInt64 {
        let b: [UInt64] = [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF,
                           0x0000FFFF0000FFFF, 0x00000000FFFFFFFF]
        let s: [UInt64] = [0, 1, 2, 4, 8, 16]
        var x = interleaved, y = interleaved >> 1
        for i in 0..<6 {
            x = (x | (x >> s[i])) & b[i]
            y = (y | (y >> s[i])) & b[i]
        }
        return x | (y << 32)
    }

    /// Encodes a point in the given ranges at `step` (1…32), or nil outside them.
    static func encode(longitude: Double, latitude: Double, step: UInt8,
                       longitudeRange: Range = longitudeRange, latitudeRange: Range = latitudeRange) -> Bits? {
        guard step > 0, step <= 32, latitudeRange.max != latitudeRange.min, longitudeRange.max != longitudeRange.min else { return nil }
        if longitude > longitudeMax || longitude < longitudeMin || latitude > latitudeMax || latitude < latitudeMin { return nil }
        if latitude < latitudeRange.min || latitude > latitudeRange.max
            || longitude < longitudeRange.min || longitude > longitudeRange.max { return nil }
        var latOffset = (latitude - latitudeRange.min) / (latitudeRange.max - latitudeRange.min)
        var lonOffset = (longitude - longitudeRange.min) / (longitudeRange.max - longitudeRange.min)
        latOffset *= Double(UInt64(1) << UInt64(step))
        lonOffset *= Double(UInt64(1) << UInt64(step))
        return Bits(bits: interleave(UInt32(latOffset), UInt32(lonOffset)), step: step)
    }

    static func decode(_ hash: Bits, longitudeRange: Range = longitudeRange, latitudeRange: Range = latitudeRange) -> Area? {
        guard !hash.isZero else { return nil }
        let separated = deinterleave(hash.bits)
        let latScale = latitudeRange.max - latitudeRange.min
        let lonScale = longitudeRange.max - longitudeRange.min
        let ilato = UInt32(truncatingIfNeeded: separated)
        let ilono = UInt32(truncatingIfNeeded: separated >> 32)
        let divisor = Double(UInt64(1) << UInt64(hash.step))
        return Area(hash: hash,
                    longitude: Range(min: longitudeRange.min + (Double(ilono) * 1.0 / divisor) * lonScale,
                                     max: longitudeRange.min + ((Double(ilono) + 1) * 1.0 / divisor) * lonScale),
                    latitude: Range(min: latitudeRange.min + (Double(ilato) * 1.0 / divisor) * latScale,
                                    max: latitudeRange.min + ((Double(ilato) + 1) * 1.0 / divisor) * latScale))
    }

    /// The centre of an area, clamped to the valid ranges.
    static func center(_ area: Area) -> (longitude: Double, latitude: Double) {
        var x = (area.longitude.min + area.longitude.max) / 2
        x = Swift.min(Swift.max(x, longitudeMin), longitudeMax)
        var y = (area.latitude.min + area.latitude.max) / 2
        y = Swift.min(Swift.max(y, latitudeMin), latitudeMax)
        return (x, y)
    }

    /// The point a 52-bit score stands for (Redis's decodeGeohash).
    static func decode(score: Double) -> (longitude: Double, latitude: Double)? {
        guard score >= 0, score < 18446744073709551616.0 else { return nil }
        guard let area = decode(Bits(bits: UInt64(score), step: stepMax)) else { return nil }
        return center(area)
    }

    /// The 52-bit score of a point (GEOADD).
    static func score(longitude: Double, latitude: Double) -> UInt64? {
        encode(longitude: longitude, latitude: latitude, step: stepMax).map(align52)
    }

    static func align52(_ hash: Bits) -> UInt64 { hash.bits << UInt64(52 - Int(hash.step) * 2) }

    private static func moveX(_ hash: inout Bits, _ d: Int) {
        guard d != 0 else { return }
        var x = hash.bits & 0xaaaaaaaaaaaaaaaa
        let y = hash.bits & 0x5555555555555555
        let zz = UInt64(0x5555555555555555) >> UInt64(64 - Int(hash.step) * 2)
        if d > 0 {
            x = x &+ (zz &+ 1)
        } else {
            x = x | zz
            x = x &- (zz &+ 1)
        }
        x &= (UInt64(0xaaaaaaaaaaaaaaaa) >> UInt64(64 - Int(hash.step) * 2))
        hash.bits = x | y
    }

    private static func moveY(_ hash: inout Bits, _ d: Int) {
        guard d != 0 else { return }
        let x = hash.bits & 0xaaaaaaaaaaaaaaaa
        var y = hash.bits & 0x5555555555555555
        let zz = UInt64(0xaaaaaaaaaaaaaaaa) >> UInt64(64 - Int(hash.step) * 2)
        if d > 0 {
            y = y &+ (zz &+ 1)
        } else {
            y = y | zz
            y = y &- (zz &+ 1)
        }
        y &= (UInt64(0x5555555555555555) >> UInt64(64 - Int(hash.step) * 2))
        hash.bits = x | y
    }

    struct Neighbors {
        var north, south, east, west, northEast, northWest, southEast, southWest: Bits
    }

    static func neighbors(_ hash: Bits) -> Neighbors {
        func moved(_ dx: Int, _ dy: Int) -> Bits {
            var h = hash
            moveX(&h, dx)
            moveY(&h, dy)
            return h
        }
        return Neighbors(north: moved(0, 1), south: moved(0, -1), east: moved(1, 0), west: moved(-1, 0),
                         northEast: moved(1, 1), northWest: moved(-1, 1), southEast: moved(1, -1), southWest: moved(-1, -1))
    }

    // MARK: Distances

    static func latitudeDistance(_ lat1: Double, _ lat2: Double) -> Double {
        earthRadius * abs(lat2 * degreesToRadians - lat1 * degreesToRadians)
    }

    /// Redis's geohashGetDistance (haversine).
    static func distance(_ lon1: Double, _ lat1: Double, _ lon2: Double, _ lat2: Double) -> Double {
        let lon1r = lon1 * degreesToRadians, lon2r = lon2 * degreesToRadians
        let v = sin((lon2r - lon1r) / 2)
        if v == 0.0 { return latitudeDistance(lat1, lat2) }
        let lat1r = lat1 * degreesToRadians, lat2r = lat2 * degreesToRadians
        let u = sin((lat2r - lat1r) / 2)
        let a = u * u + cos(lat1r) * cos(lat2r) * v * v
        return 2.0 * earthRadius * asin(a.squareRoot())
    }

    // MARK: Searching

    /// A search area: a circle or a box around a centre, in a unit.
    struct Shape {
        enum Kind {
            case radius(Double)
            case box(width: Double, height: Double)
        }
        var kind: Kind = .radius(0)
        /// Longitude, latitude.
        var center = (0.0, 0.0)
        /// Meters per unit.
        var conversion = 1.0

        /// The distance from the centre to (lon, lat) when within the shape.
        func contains(longitude: Double, latitude: Double) -> Double? {
            switch kind {
            case .radius(let radius):
                let d = GeoHash.distance(center.0, center.1, longitude, latitude)
                return d > radius * conversion ? nil : d
            case .box(let width, let height):
                let widthMeters = width * conversion, heightMeters = height * conversion
                if GeoHash.latitudeDistance(latitude, center.1) > heightMeters / 2 { return nil }
                if GeoHash.distance(longitude, latitude, center.0, latitude) > widthMeters / 2 { return nil }
                return GeoHash.distance(center.0, center.1, longitude, latitude)
            }
        }

        /// Redis's geohashBoundingBox: min lon, min lat, max lon, max lat.
        var bounds: (Double, Double, Double, Double) {
            let (longitude, latitude) = center
            let height: Double, width: Double
            switch kind {
            case .radius(let r):
                height = conversion * r
                width = conversion * r
            case .box(let w, let h):
                height = conversion * h / 2
                width = conversion * w / 2
            }
            let latDelta = (height / GeoHash.earthRadius) / GeoHash.degreesToRadians
            let lonDeltaTop = (width / GeoHash.earthRadius / cos((latitude + latDelta) * GeoHash.degreesToRadians))
                / GeoHash.degreesToRadians
            let lonDeltaBottom = (width / GeoHash.earthRadius / cos((latitude - latDelta) * GeoHash.degreesToRadians))
                / GeoHash.degreesToRadians
            let southern = latitude < 0
            return (southern ? longitude - lonDeltaBottom : longitude - lonDeltaTop, latitude - latDelta,
                    southern ? longitude + lonDeltaBottom : longitude + lonDeltaTop, latitude + latDelta)
        }

        var radiusMeters: Double {
            switch kind {
            case .radius(let r): return r * conversion
            case .box(let w, let h): return ((w / 2) * (w / 2) + (h / 2) * (h / 2)).squareRoot() * conversion
            }
        }
    }

    static func estimateSteps(rangeMeters: Double, latitude: Double) -> UInt8 {
        if rangeMeters == 0 { return 26 }
        var range = rangeMeters
        var step = 1
        while range < mercatorMax {
            range *= 2
            step += 1
        }
        step -= 2
        if latitude > 66 || latitude < -66 {
            step -= 1
            if latitude > 80 || latitude < -80 { step -= 1 }
        }
        return UInt8(Swift.min(Swift.max(step, 1), 26))
    }

    /// The boxes to search for a shape, in Redis's order (its own box, then
    /// N, S, E, W, NE, NW, SE, SW), the useless ones zeroed
    /// (geohashCalculateAreasByShapeWGS84).
    static func searchBoxes(_ shape: Shape) -> [Bits] {
        let (minLon, minLat, maxLon, maxLat) = shape.bounds
        let (longitude, latitude) = shape.center
        var steps = estimateSteps(rangeMeters: shape.radiusMeters, latitude: latitude)
        var hash = encode(longitude: longitude, latitude: latitude, step: steps) ?? Bits(bits: 0, step: steps)
        var around = neighbors(hash)
        var area = decode(hash) ?? Area(hash: hash, longitude: Range(min: 0, max: 0), latitude: Range(min: 0, max: 0))
        var decrease = false
        if let north = decode(around.north), north.latitude.max < maxLat { decrease = true }
        if let south = decode(around.south), south.latitude.min > minLat { decrease = true }
        if let east = decode(around.east), east.longitude.max < maxLon { decrease = true }
        if let west = decode(around.west), west.longitude.min > minLon { decrease = true }
        if steps > 1 && decrease {
            steps -= 1
            hash = encode(longitude: longitude, latitude: latitude, step: steps) ?? Bits(bits: 0, step: steps)
            around = neighbors(hash)
            area = decode(hash) ?? area
        }
        if steps >= 2 {
            if area.latitude.min < minLat {
                around.south = .zero
                around.southWest = .zero
                around.southEast = .zero
            }
            if area.latitude.max > maxLat {
                around.north = .zero
                around.northEast = .zero
                around.northWest = .zero
            }
            if area.longitude.min < minLon {
                around.west = .zero
                around.southWest = .zero
                around.northWest = .zero
            }
            if area.longitude.max > maxLon {
                around.east = .zero
                around.southEast = .zero
                around.northEast = .zero
            }
        }
        return [hash, around.north, around.south, around.east, around.west, around.northEast, around.northWest,
                around.southEast, around.southWest]
    }

    /// The score range [min, max) of the members inside a box.
    static func scoreRange(_ hash: Bits) -> (min: UInt64, max: UInt64) {
        var next = hash
        next.bits += 1
        return (align52(hash), align52(next))
    }

    /// GEOHASH's 11-character standard geohash of a score (re-encoded over ±90° latitude).
    static func standardHash(score: Double) -> String? {
        guard let (longitude, latitude) = decode(score: score) else { return nil }
        let alphabet = Array("0123456789bcdefghjkmnpqrstuvwxyz")
        let hash = encode(longitude: longitude, latitude: latitude, step: 26,
                          longitudeRange: Range(min: -180, max: 180), latitudeRange: Range(min: -90, max: 90))
        let bits = hash?.bits ?? 0
        var text = ""
        for i in 0..<11 {
            let index = i == 10 ? 0 : Int((bits >> UInt64(52 - (i + 1) * 5)) & 0x1f)
            text.append(alphabet[index])
        }
        return text
    }

    /// A distance as Redis prints it: four decimals (fixedpoint_d2string).
    static func formatDistance(_ d: Double) -> String {
        if d == 0 { return "0.0000" }
        let scaled = (d * 10000).rounded(.toNearestOrEven)
        guard scaled.magnitude < 9.2e18 else { return String(format: "%.4f", d) }
        let value = Int64(scaled)
        var digits = String(value.magnitude)
        if digits.count < 5 { digits = String(repeating: "0", count: 5 - digits.count) + digits }
        let split = digits.index(digits.endIndex, offsetBy: -4)
        return (value < 0 ? "-" : "") + digits[..<split] + "." + digits[split...]
    }
}
