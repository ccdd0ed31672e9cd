import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization

/// Exit statuses beyond 0 (success or skip), 1 (error) and 64 (usage).
enum IvyExit {
    static let notSignedIn: Int32 = 3
    static let busy: Int32 = 4
    static let partialFailure: Int32 = 5
}
