/// MD5 (RFC 1321), for Drive's `md5Checksum`: downloads are checked against it. Not for
/// security; none of the allowed dependencies provides it on Linux, so it lives here.
package struct MD5: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    package init() {}

    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]

    private static let constants: [UInt32] = (0..<64).map { index in
        UInt32(truncatingIfNeeded: Int64((abs(sin(Double(index + 1))) * 4_294_967_296).rounded(.down)))
    }

    /// Feeds more bytes; can be called repeatedly to hash a stream.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        let chunk = Array(bytes)
        length &+= UInt64(chunk.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, chunk.count)
            pending += chunk[0..<take]
            offset = take
            guard pending.count == 64 else { return }
            let block = pending
            block.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        chunk.withUnsafeBytes { raw in
            while chunk.count - offset >= 64 {
                compress(UnsafeRawBufferPointer(rebasing: raw[offset..<offset + 64]))
                offset += 64
            }
        }
        pending += chunk[offset...]
    }

    /// The digest as 32 lowercase hex digits.
    package mutating func finalize() -> String {
        let bitLength = length &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 0, to: 64, by: 8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        tail.withUnsafeBytes { raw in
            for start in stride(from: 0, to: raw.count, by: 64) {
                compress(UnsafeRawBufferPointer(rebasing: raw[start..<start + 64]))
            }
        }
        pending = []
        let words = [state.0, state.1, state.2, state.3]
        return words.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
            .map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }
            .joined()
    }

    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var md5 = MD5()
        md5.update(bytes)
        return md5.finalize()
    }

    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        var words = (0..<16).map { UInt32(littleEndian: block.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)) }
        var (a, b, c, d) = state
        for step in 0..<64 {
            let f: UInt32, g: Int
            switch step {
            case 0..<16: (f, g) = ((b & c) | (~b & d), step)
            case 16..<32: (f, g) = ((d & b) | (~d & c), (5 * step + 1) % 16)
            case 32..<48: (f, g) = (b ^ c ^ d, (3 * step + 5) % 16)
            default: (f, g) = (c ^ (b | ~d), (7 * step) % 16)
            }
            let sum = a &+ f &+ Self.constants[step] &+ words[g]
            (a, d, c) = (d, c, b)
            b = b &+ (sum << Self.shifts[step] | sum >> (32 - Self.shifts[step]))
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
