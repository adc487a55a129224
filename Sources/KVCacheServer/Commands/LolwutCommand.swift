import Foundation
import RESP

/// LOLWUT [VERSION v] [args]: Redis's computer art (lolwut.c). Version 5
/// draws Georg Nees's "Schotter" in Braille characters (lolwut5.c, ported
/// as is); every other version, version 6's pixel art included, answers the
/// version line alone, which is what Redis 7.0 answers by default.
let lolwutCommands: [Command] = [
    Command(name: "lolwut", arity: -1, flags: ["readonly", "fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Displays computer art and the Redis version", handler: lolwut),
]

private func lolwut(_ ctx: CommandContext) throws {
    var version = Int64(Server.redisVersion.prefix { $0 != "." }) ?? 7
    var first = 1
    if ctx.args.count >= 3 && ctx.option(1) == "version" {
        version = try ctx.integer(2)
        first = 3
    }
    var text = ""
    if version == 5 {
        // cols, squares per row, squares per column, each clamped as Redis does.
        var options: [Int64] = [66, 8, 12]
        for (i, j) in (first..<min(ctx.args.count, first + 3)).enumerated() { options[i] = try ctx.integer(j) }
        let cols = Int(min(max(options[0], 1), 1000))
        let perRow = Int(min(max(options[1], 1), 200))
        let perColumn = Int(min(max(options[2], 1), 200))
        text = LolwutCanvas.schotter(columns: cols, squaresPerRow: perRow, squaresPerColumn: perColumn).braille()
            + "\nGeorg Nees - schotter, plotter on paper, 1968. "
    }
    text += "Redis ver. \(Server.redisVersion)\n"
    ctx.connection.replyVerbatim(text)
}

/// lolwut.c's canvas: one byte a pixel, drawn with Bresenham lines.
struct LolwutCanvas {
    let width: Int, height: Int
    private var pixels: [UInt8]

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height)
    }

    subscript(x: Int, y: Int) -> Bool {
        get { x >= 0 && x < width && y >= 0 && y < height && pixels[x + y * width] != 0 }
        set { if x >= 0 && x < width && y >= 0 && y < height { pixels[x + y * width] = newValue ? 1 : 0 } }
    }

    mutating func line(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) {
        var (x, y) = (x0, y0)
        let dx = abs(x1 - x0), dy = abs(y1 - y0)
        let sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1
        var err = dx - dy
        while true {
            self[x, y] = true
            if x == x1 && y == y1 { break }
            let e2 = err * 2
            if e2 > -dy { err -= dy; x += sx }
            if e2 < dx { err += dx; y += sy }
        }
    }

    /// A square centred at x, y, of side `size`, rotated by `angle` radians.
    mutating func square(_ x: Int, _ y: Int, size: Float, angle: Float) {
        let side = (size / 1.4142135623).rounded()
        var k = Float.pi / 4 + angle
        var px = [Int](), py = [Int]()
        for _ in 0..<4 {
            px.append(Int((sin(k) * side + Float(x)).rounded()))
            py.append(Int((cos(k) * side + Float(y)).rounded()))
            k += Float.pi / 2
        }
        for j in 0..<4 { line(px[j], py[j], px[(j + 1) % 4], py[(j + 1) % 4]) }
    }

    /// lwDrawSchotter: rows of squares, turned and moved further at random
    /// the lower the row.
    static func schotter(columns: Int, squaresPerRow: Int, squaresPerColumn: Int) -> LolwutCanvas {
        let canvasWidth = columns * 2
        let padding = canvasWidth > 4 ? 2 : 0
        let side = Float(canvasWidth - padding * 2) / Float(squaresPerRow)
        var canvas = LolwutCanvas(width: canvasWidth, height: Int(side * Float(squaresPerColumn)) + padding * 2)
        func jitter(_ y: Int) -> Float {
            let r = Float.random(in: 0...1) / Float(squaresPerColumn) * Float(y)
            return Bool.random() ? -r : r
        }
        for y in 0..<squaresPerColumn {
            for x in 0..<squaresPerRow {
                var sx = Int(Float(x) * side + side / 2) + padding
                var sy = Int(Float(y) * side + side / 2) + padding
                var angle: Float = 0
                if y > 1 {
                    angle = jitter(y)
                    sx = Int(Float(sx) + jitter(y) * side / 3)
                    sy = Int(Float(sy) + jitter(y) * side / 3)
                }
                canvas.square(sx, sy, size: side, angle: angle)
            }
        }
        return canvas
    }

    /// Four rows by two columns of pixels a Braille character (U+2800 on).
    func braille() -> String {
        var text = ""
        for y in stride(from: 0, to: height, by: 4) {
            for x in stride(from: 0, to: width, by: 2) {
                var bits = 0
                let dots = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (0, 3), (1, 3)]
                for (bit, (dx, dy)) in dots.enumerated() where self[x + dx, y + dy] { bits |= 1 << bit }
                text.unicodeScalars.append(Unicode.Scalar(UInt32(0x2800 + bits))!)
            }
            if y != height - 1 { text += "\n" }
        }
        return text
    }
}
