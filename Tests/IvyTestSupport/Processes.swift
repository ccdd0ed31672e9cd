// Every test target that runs a program gets the one child-process helper, the one lookup of
// the built programs and the one scripted sign-in from here, with the rest of its support.
@_exported import IvyProcesses
