import Foundation

extension Date {
    /// A date as UTC text (`2001-01-01T00:00:00Z`) when it is a whole second of the years 1 to 9999,
    /// otherwise as its time interval (`Date(timeIntervalSinceReferenceDate: nan)`). Computed here:
    /// Foundation's `Date.description` traps on NaN.
    var safeDescription: String {
        let t = timeIntervalSinceReferenceDate
        // 0001-01-01 and 10000-01-01 as seconds since 2001-01-01.
        guard t >= -63_113_904_000, t < 252_423_993_600, t.rounded(.down) == t else {
            return "Date(timeIntervalSinceReferenceDate: \(t))"
        }
        // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm, proleptic Gregorian).
        let unix = Int(t) + 978_307_200
        let days = unix >= 0 ? unix / 86_400 : (unix - 86_399) / 86_400
        let seconds = unix - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let paddedYear = String(repeating: "0", count: max(0, 4 - "\(year)".count)) + "\(year)"
        return "\(paddedYear)-\(two(month))-\(two(day))T\(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60))Z"
    }
}

/// A value as text for object descriptions and messages: as Foundation prints it, except a date outside
/// the years 1 to 9999 (or NaN), which Foundation's `description` traps on, printed by `safeDescription`.
func safeDescription(_ value: Any) -> String {
    if let date = value as? Date {
        let t = date.timeIntervalSinceReferenceDate
        if !(t >= -63_113_904_000 && t < 252_423_993_600) { return date.safeDescription }
    }
    return "\(value)"
}
