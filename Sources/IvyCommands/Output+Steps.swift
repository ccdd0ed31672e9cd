import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization

extension Output {
    /// `ivy sync --verbose`: one line per finished operation, on standard output, and a failure
    /// on standard error, each as it happens: `uploaded book ID "Title"`.
    func step(_ step: SyncStep, prefix: String = "") {
        let title = step.title.map { " \"\($0)\"" } ?? ""
        let what = step.entity + title
        switch step.result {
        case .done(let action, let conflict):
            let text: String
            switch action {
            case .upload: text = "uploaded \(what)"
            case .download: text = "downloaded \(what)"
            case .merge: text = "merged \(what)" + (conflict ? " (changed on both sides)" : "")
            case .deleteRemote: text = "deleted on Drive \(what)"
            case .deleteLocal: text = "deleted here \(what)"
            }
            line(prefix + Display.safe(text))
        case .staleDuplicateDeleted(let file):
            line(prefix + Display.safe("deleted on Drive a stale duplicate of \(step.entity): \(file)"))
        case .skipped(let reason):
            line(prefix + Display.safe("skipped \(reason)"))
        case .failed(let reason):
            error(prefix + "failed: \(what): \(reason)")
        }
    }
}
