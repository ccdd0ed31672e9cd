import Foundation

/// `text` as one shell word: as it is when it has nothing a shell would read specially, else
/// single-quoted.
func shellQuoted(_ text: String) -> String {
    let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-")
    if !text.isEmpty && text.allSatisfy(plain.contains) { return text }
    return "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
}
